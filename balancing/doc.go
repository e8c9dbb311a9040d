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
//
// The other strategies of DESIGN §3 are Pickers, which pick one order at a
// time over the eligible Scales given as Candidates in compId order, each
// pick seeing the loads of the batch's earlier picks: [Random],
// [WeightedRandom], [RoundRobin], [WeightedRoundRobin],
// [SmoothWeightedRoundRobin] (nginx's), [WeightedResponseTime] (Ribbon's,
// fed by [EWMA]), [LeastConnections], [PowerOfTwo] and [WeightedWaterfill].
// Their state lies in exported fields that a store persists between batches,
// and their randomness comes as two integers below 2^53 per order. Consistent
// hashing is a [Ring] looked up in O(log P) instead of a Picker that reads
// every Scale, and [SlowStartWeight] ramps up the weight of a new Scale. All
// of them keep to integer arithmetic below 2^53 (ratios cross-multiplied),
// fix the order of their floating-point operations, and never iterate a map
// for order, so that the Redis Lua scripts make the same picks.
//
// [Strategies] is the registry: every strategy once, with how a store runs
// it ([Kind]), what it costs ([Cost]: cheap strategies read O(log N) of the
// pool per order, costly ones every eligible Scale), whether it reads
// weights or keeps state, and its Picker. The API validates a pool's
// strategy against it, both stores run each strategy as it says (the
// memory store runs the cheap Pickers, [RankPicker]s, over its index by
// rank), and the tests iterate it; the Redis scripts keep a table that a
// test holds to it.
package balancing
