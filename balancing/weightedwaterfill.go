package balancing

// WeightedWaterfill is the strategy weighted-waterfill (ours, DESIGN §3): the
// water level of waterfill measured per unit of weight, for Scales of
// different capacity. Each order goes to the Scale with the lowest
// (Count+1)/Weight — the load it would carry per weight after taking the
// order — ties to the first in compId order. Plain Waterfill stays the
// seed's and ignores weight. It has no state; a pick costs O(n).
type WeightedWaterfill struct{}

var _ Picker = WeightedWaterfill{}

// Pick returns the first candidate with the lowest (Count+1)/Weight,
// compared by cross-multiplication.
func (WeightedWaterfill) Pick(cands []Candidate, _, _ uint64) int {
	best := 0
	for i := 1; i < len(cands); i++ {
		c, b := cands[i], cands[best]
		if (c.Count+1)*b.Weight < (b.Count+1)*c.Weight {
			best = i
		}
	}
	return best
}
