package balancing

// RoundRobin is the strategy round-robin (seed 001 §2.1). Instead of the
// seed's index, which shifts when Scales come and go, its state is the last
// compId picked: the next pick is the first eligible compId after it in byte
// order, wrapping to the first. A Scale that joins takes its place in the
// cycle, one that leaves is skipped, and a cycle begun on one replica goes on
// on the next once the store persists Last.
type RoundRobin struct {
	// Last is the compId of the previous pick; "" before the first, which
	// then goes to the first candidate (compIds are never empty).
	Last string
}

var _ RankPicker = (*RoundRobin)(nil)

// Pick is PickRank over cands.
func (p *RoundRobin) Pick(cands []Candidate, r1, r2 uint64) int {
	return p.PickRank(Candidates(cands), r1, r2)
}

// PickRank returns the first Scale whose ID is greater than Last, or the
// first Scale if there is none, and records it in Last. It reads O(log n)
// Scales.
func (p *RoundRobin) PickRank(r Ranks, _, _ uint64) int {
	i := r.After(p.Last)
	if i == r.Len() {
		i = 0
	}
	p.Last = r.At(i).ID
	return i
}

func (p *RoundRobin) clone() Picker {
	c := *p
	return &c
}

// WeightedRoundRobin is the strategy weighted-round-robin (seed 001 §2.3, the
// modulo on the weight axis): a pool counter c, and the pick is the Scale
// whose interval on the weight axis holds c mod Σw. Weights 4,6,3,2,5 give
// AAAA BBBBBB CCC DD EEEEE: a Scale's turns come in one block, which is what
// SmoothWeightedRoundRobin avoids. When Scales come and go the counter simply
// runs on modulo the new total.
type WeightedRoundRobin struct {
	// Counter is the number of orders picked so far, from 0. At a million
	// orders a second it takes 285 years to reach 2^53, where a Lua port's
	// doubles would stop counting exactly.
	Counter uint64
}

var _ Picker = (*WeightedRoundRobin)(nil)

// Pick returns the candidate whose interval on the weight axis holds
// Counter mod Σw, and advances Counter. It panics if the weights sum to less
// than 1.
func (p *WeightedRoundRobin) Pick(cands []Candidate, _, _ uint64) int {
	total := totalWeight(cands, "WeightedRoundRobin")
	i := onWeightAxis(cands, int64(p.Counter%uint64(total)))
	p.Counter++
	return i
}

func (p *WeightedRoundRobin) clone() Picker {
	c := *p
	return &c
}
