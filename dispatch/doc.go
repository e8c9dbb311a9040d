// Package dispatch is the service core of the dispatcher: pools of Scales,
// batches of orders, their assignment and their life cycle.
//
// A [Service] validates every request against the rules of the v1 API, takes
// the clock and the randomness a dispatch needs, and hands one atomic
// operation to a [Store]. A Store keeps all state and applies each operation
// all or nothing: the embedded store in store/memory and the Redis store in
// store/redis both implement it, and one conformance suite checks both.
//
// Errors are the sentinel values of errors.go, wrapped with a detail that can
// be shown to the caller; test them with [errors.Is].
package dispatch
