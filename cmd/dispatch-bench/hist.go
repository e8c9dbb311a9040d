package main

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: every power of two is cut into
// 2^subBits buckets, so a recorded value is known to within 1/128 (0.8 %),
// and values below 256 ns exactly.
const subBits = 7

// histogram counts durations in log-linear buckets, as HDR histograms do:
// fixed memory (a few thousand counters) however long the run, and
// percentiles within 0.8 %. The maximum is kept exactly. Not safe for
// concurrent use: each worker has its own, merged at the end.
type histogram struct {
	counts []uint64
	total  uint64
	max    int64
}

// bucket is the index of the bucket that holds v ≥ 0.
func bucket(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	n := bits.Len64(v) - 1 // floor(log2 v) ≥ subBits
	return (n-subBits+1)<<subBits + int(v>>(n-subBits)-1<<subBits)
}

// bucketHigh is the largest value that falls into bucket i.
func bucketHigh(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	n := i>>subBits + subBits - 1
	sub := uint64(i & (1<<subBits - 1))
	low := (1<<subBits + sub) << (n - subBits)
	return low + 1<<(n-subBits) - 1
}

// record adds one duration; negative ones count as zero.
func (h *histogram) record(d time.Duration) {
	v := max(int64(d), 0)
	i := bucket(uint64(v))
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]uint64, i+1-len(h.counts))...)
	}
	h.counts[i]++
	h.total++
	h.max = max(h.max, v)
}

// merge adds every value of o.
func (h *histogram) merge(o *histogram) {
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]uint64, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100): the
// smallest recorded value that at least p % of the values do not exceed,
// rounded up to its bucket's upper bound but never beyond the maximum. It
// returns 0 for an empty histogram.
func (h *histogram) percentile(p float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p / 100 * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(int64(bucketHigh(i)), h.max))
		}
	}
	return time.Duration(h.max)
}
