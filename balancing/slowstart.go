package balancing

// SlowStartWeight returns the effective weight of a Scale of weight w that
// became active sinceMs milliseconds ago, under a slow-start window of
// windowMs: max(1, min(w, ⌊w·sinceMs/windowMs⌋)), a linear ramp as Dubbo's
// warm-up (weight 100, 10 minute window: 60 s → 10, 5 min → 50, 9 min → 90,
// 10 min → 100). A window <= 0 turns slow start off (w), and a negative
// sinceMs, a clock that went back, counts as 0 (weight 1). The product
// w·sinceMs stays below 2^53, exact in a Lua port, for weights up to 10^6 and
// windows up to 9·10^9 ms (104 days).
func SlowStartWeight(w int64, sinceMs, windowMs int64) int64 {
	if windowMs <= 0 || sinceMs >= windowMs {
		return w
	}
	return max(1, min(w, w*max(0, sinceMs)/windowMs))
}
