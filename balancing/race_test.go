//go:build race

package balancing_test

// raceEnabled tells long tests that the race detector slows them tenfold.
const raceEnabled = true
