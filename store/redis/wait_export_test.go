package redis

// UnshareWaits makes every answer of s send a WAIT of its own, as the
// store did before WAITs were shared: the baseline of BenchmarkWaitMixed.
func UnshareWaits(s *Store) { s.waiters.unshared = true }
