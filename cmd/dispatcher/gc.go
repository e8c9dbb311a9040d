package main

import "runtime/debug"

// defaultGCPercent is the garbage collector's target (GOGC) of a replica on
// Redis whose environment sets no GOGC. Such a replica keeps a live heap of a few MB
// and allocates per request, so at Go's default of 100 it collects several
// times a second under load: a sixth of its CPU at batches of 100 orders
// (issue 21, docs/benchmarks.md). At 400 it collects a quarter as often,
// for a heap some 4× its live size, still tens of MB.
const defaultGCPercent = 400

// tuneGC sets the collector's target to defaultGCPercent unless GOGC is
// set, which the runtime has read already and which wins. It returns the
// target in force. run calls it for the Redis store only: on the embedded
// store the heap holds every pool's state, which Go's default target of
// 100 keeps within about twice its size.
func tuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}
