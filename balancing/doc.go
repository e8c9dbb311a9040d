// Package balancing holds the dispatcher's pure balancing algorithms: no I/O,
// no clock and no global randomness, so that the Go reference, the Redis Lua
// scripts and the tests can agree on every pick.
//
// The core algorithm is waterfill (seed 000): Scales sorted by load form a
// table of levels, and each order goes to the first level that still has room,
// spread over the Scales of that level. [Waterfill] reproduces the seed's
// sequence exactly, with exact 64-bit arithmetic where the seed's Java int
// would wrap, and costs O(k log N + M) for M orders that cross k levels of N
// Scales instead of the seed's O(N) per order. [Table] shows the seed's
// compIdArr and dispatchCountArr for operators.
package balancing
