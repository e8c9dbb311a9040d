package balancing

import "math"

// EWMAAlpha is the smoothing factor of the response-time averages: each
// reported duration moves the average a fifth of the way towards it.
const EWMAAlpha = 0.2

// EWMA returns the exponentially weighted moving average of a Scale's
// reported durations after one more sample: the sample itself when the Scale
// has no average yet (has false), else avg + 0.2*(sampleMs − avg).
//
// The operations run in that order, each rounded to float64: the conversion
// keeps Go from fusing the multiply and the add into one FMA instruction
// (which it may do on arm64, ppc64 and s390x), so the result is bit for bit
// what a Lua port computes. A port that stores the average in Redis must
// write it with 17 significant digits (string.format("%.17g", avg)): Lua's
// tostring keeps only 14 and the averages would drift apart.
func EWMA(avg float64, has bool, sampleMs int64) float64 {
	x := float64(sampleMs)
	if !has {
		return x
	}
	return avg + float64(EWMAAlpha*(x-avg))
}

// WeightedResponseTime is the strategy weighted-response-time, after
// Ribbon's WeightedResponseTimeRule (seed 002): a Scale's weight is the sum of
// all the average response times minus its own, so faster Scales get more
// orders (two Scales averaging 100 ms and 10 ms get weights 10 and 100).
//
// Unlike Ribbon it computes the weights at every pick from the current
// averages (no 30-second timer, so none is stale and none belongs to a Scale
// that left), draws once (no loop waiting for a live server) and falls back
// to round robin instead of failing: while fewer than two candidates have an
// average, and when the weights sum to almost 0 (every average about 0).
// Scales without an average count with the mean of the known averages, so a
// new Scale neither starves nor floods.
type WeightedResponseTime struct {
	// RR is the round robin of the fallback; it advances only on the picks
	// it makes.
	RR RoundRobin
}

var _ Picker = (*WeightedResponseTime)(nil)

// MinResponseTimeWeight is the total weight, in milliseconds, below which
// WeightedResponseTime falls back to round robin, as Ribbon does below
// 0.001: the Scales then answer equally fast for any purpose, and the draw
// stays clear of subnormal numbers, which averages decaying towards 0 could
// otherwise reach and where u < W no longer holds.
const MinResponseTimeWeight = 0.001

// twoTo53 is 2^53: r1/2^53 is a uniform float64 in [0, 1), exact because
// r1 < 2^53.
const twoTo53 = 1 << 53

// Pick returns a candidate drawn with probability proportional to its
// weight, or the round robin's pick in the fallback cases. In float64, in
// this order, each operation rounded (a Lua port does the same):
//
//	k     = the number of candidates with an average
//	mean  = (Σ known AvgMs, summed in compId order) / k
//	a_i   = AvgMs if known, else mean
//	total = Σ a_i, summed in compId order
//	w_i   = total − a_i
//	acc_i = acc_{i−1} + w_i, acc_{−1} = 0;  W = acc_{n−1}
//	u     = (r1 / 2^53) * W
//
// and the pick is the first i with u < acc_i. If k < 2, or W is not a finite
// number of at least MinResponseTimeWeight, round robin picks instead. For
// such a W, u < W (the rounded product of a normal float64 and a number below
// 1 stays below it), so the search always ends, and a Scale of weight 0 is
// never picked. Ribbon takes the first acc_i >= u instead, which picks a
// Scale of weight 0 at the start of the axis when u is 0.
func (p *WeightedResponseTime) Pick(cands []Candidate, r1, _ uint64) int {
	k, known := 0, 0.0
	for _, c := range cands {
		if c.HasAvg {
			k++
			known += c.AvgMs
		}
	}
	if k < 2 {
		return p.RR.Pick(cands, r1, 0)
	}
	mean := known / float64(k)
	total := 0.0
	for _, c := range cands {
		total += avgOr(c, mean)
	}
	w := 0.0
	for _, c := range cands {
		w += total - avgOr(c, mean)
	}
	if !(w >= MinResponseTimeWeight) || math.IsInf(w, 1) {
		return p.RR.Pick(cands, r1, 0)
	}
	u := float64(r1) / twoTo53 * w
	acc := 0.0
	for i, c := range cands {
		acc += total - avgOr(c, mean)
		if u < acc {
			return i
		}
	}
	panic("balancing: WeightedResponseTime drew beyond the total weight")
}

// avgOr returns c's average response time, or mean if it has none.
func avgOr(c Candidate, mean float64) float64 {
	if c.HasAvg {
		return c.AvgMs
	}
	return mean
}

func (p *WeightedResponseTime) clone() Picker {
	c := *p
	return &c
}
