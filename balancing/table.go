package balancing

import "math"

// Table returns compIdArr and dispatchCountArr of r as the seed's init builds
// them, in O(N): dispatchCounts[i] = (Count[i+1] - Count[i]) * (i+1) for
// i < N-1 and LastLevel for the last. Within the service's bounds (counts up
// to 2^31-1, at most 10^6 Scales) every value is exact; beyond them a value
// that does not fit an int64 is shown as math.MaxInt64. It returns two empty
// slices for an empty r.
func Table(r Ranked) (compIDs []string, dispatchCounts []int64) {
	n := r.Len()
	compIDs = make([]string, n)
	dispatchCounts = make([]int64, n)
	for i := range n {
		l := r.At(i)
		compIDs[i] = l.ID
		if i == n-1 {
			dispatchCounts[i] = LastLevel
			break
		}
		diff := uint64(r.At(i+1).Count) - uint64(l.Count)
		width := uint64(i) + 1
		if diff > math.MaxInt64/width {
			dispatchCounts[i] = math.MaxInt64
		} else {
			dispatchCounts[i] = int64(diff * width)
		}
	}
	return compIDs, dispatchCounts
}
