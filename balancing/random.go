package balancing

// Random is the strategy random (seed 001 §1.1): a uniform pick over the
// eligible Scales, index r1 mod n. It has no state and ignores weights and
// loads. The bias of r1 mod n is below n/2^53, far under anything a test can
// see.
type Random struct{}

var _ RankPicker = Random{}

// Pick returns r1 mod len(cands).
func (p Random) Pick(cands []Candidate, r1, r2 uint64) int {
	return p.PickRank(Candidates(cands), r1, r2)
}

// PickRank returns r1 mod r.Len(), reading no Scale.
func (Random) PickRank(r Ranks, r1, _ uint64) int {
	return int(r1 % uint64(r.Len()))
}

// WeightedRandom is the strategy weighted-random (seed 001 §1.3, and Dubbo's
// RandomLoadBalance of seed 004): the weights lie end to end on an axis of
// length Σw, t = r1 mod Σw falls in one of them, and that Scale is picked.
// Unlike Dubbo it draws no second number when all weights are equal: r1 mod Σw
// is then uniform over the Scales already, and one rule is simpler to port.
// It has no state.
type WeightedRandom struct{}

var _ Picker = WeightedRandom{}

// Pick returns the first candidate whose prefix sum of weights exceeds
// t = r1 mod Σw. It panics if the weights sum to less than 1.
func (WeightedRandom) Pick(cands []Candidate, r1, _ uint64) int {
	t := int64(r1 % uint64(totalWeight(cands, "WeightedRandom")))
	return onWeightAxis(cands, t)
}

// onWeightAxis returns the candidate whose interval [prefix, prefix+w) on the
// weight axis holds pos, for 0 <= pos < Σw.
func onWeightAxis(cands []Candidate, pos int64) int {
	var prefix int64
	for i, c := range cands {
		prefix += c.Weight
		if pos < prefix {
			return i
		}
	}
	panic("balancing: position beyond the total weight")
}
