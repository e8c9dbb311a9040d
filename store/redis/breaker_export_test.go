package redis

import "time"

// SetBreakerProbe sets how often an open breaker lets a command through,
// for a test, and returns the function that restores it.
func SetBreakerProbe(d time.Duration) (restore func()) {
	old := breakerProbe
	breakerProbe = d
	return func() { breakerProbe = old }
}
