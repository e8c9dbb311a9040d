package balancing

// PowerOfTwo is the strategy power-of-two: the power of two random choices
// of Envoy's least_request balancer, nginx's "random two" and the balls-into-
// bins result (Azar, Broder, Karlin and Upfal; Mitzenmacher): two distinct
// Scales drawn uniformly, the one with the lower Count/Weight gets the order.
// With n orders into n empty Scales the fullest Scale ends near
// ln ln n / ln 2 instead of random's ln n / ln ln n. It has no state and reads
// two Scales per order.
type PowerOfTwo struct{}

var _ RankPicker = PowerOfTwo{}

// Pick is PickRank over cands.
func (p PowerOfTwo) Pick(cands []Candidate, r1, r2 uint64) int {
	return p.PickRank(Candidates(cands), r1, r2)
}

// PickRank draws a = r1 mod n and b = r2 mod (n-1), plus 1 if b >= a (so
// that b != a and both are uniform), and returns b if its Count/Weight is
// lower than a's (cross-multiplied), else a. A single Scale is always 0.
func (PowerOfTwo) PickRank(r Ranks, r1, r2 uint64) int {
	n := uint64(r.Len())
	if n == 1 {
		return 0
	}
	a := int(r1 % n)
	b := int(r2 % (n - 1))
	if b >= a {
		b++
	}
	if lessLoaded(r.At(b), r.At(a)) {
		return b
	}
	return a
}
