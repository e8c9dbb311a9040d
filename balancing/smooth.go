package balancing

import (
	"maps"
	"slices"
	"strings"
)

// SmoothWeightedRoundRobin is the strategy smooth-weighted-round-robin, as
// nginx's upstream round robin (ngx_http_upstream_get_peer) and the table of
// seed 001 §2.4: each pick adds every candidate's weight to its current
// weight, picks the highest current weight (ties: the first in compId order)
// and takes the total weight off the winner. Weights 5,1,1 give
// A A B A C A A: the heavy Scale's turns are spread between the others'.
// Seed 003's C# "smooth" implementation is a different algorithm whose output
// bunches them (five A in a row); see the test that ports it.
//
// A Scale entering the eligible set starts at current weight 0 and a Scale
// leaving it is forgotten (DESIGN §3). While the set stays the same the
// current weights sum to 0, none falls below −Σw (a winner's is at least 0
// before it gives Σw back), and every Σw picks give each Scale exactly its
// weight in turns. A pick costs O(n).
type SmoothWeightedRoundRobin struct {
	// Current maps compId to current weight. A missing entry is 0. It is
	// never iterated for order, so Go's random map order cannot show.
	Current map[string]int64
}

var _ Picker = (*SmoothWeightedRoundRobin)(nil)

// Pick runs one round of nginx's smooth weighted round robin over all the
// candidates and returns the winner. It panics if the weights sum to less
// than 1.
func (p *SmoothWeightedRoundRobin) Pick(cands []Candidate, _, _ uint64) int {
	if p.Current == nil {
		p.Current = make(map[string]int64, len(cands))
	}
	best, total := -1, int64(0)
	var bestCur int64
	for i, c := range cands {
		cur := p.Current[c.ID] + c.Weight
		p.Current[c.ID] = cur
		total += c.Weight
		if best < 0 || cur > bestCur {
			best, bestCur = i, cur
		}
	}
	if total < 1 {
		panic("balancing: SmoothWeightedRoundRobin with total weight < 1")
	}
	p.Current[cands[best].ID] = bestCur - total
	// Every candidate has an entry now, so more entries than candidates
	// means some belong to Scales that left.
	if len(p.Current) > len(cands) {
		forget(p.Current, cands)
	}
	return best
}

// forget deletes the entries of current whose compId is not among cands
// (sorted by ID). Deletion does not depend on map order.
func forget(current map[string]int64, cands []Candidate) {
	for id := range current {
		if _, ok := candidateIndex(cands, id); !ok {
			delete(current, id)
		}
	}
}

// candidateIndex returns the index of id in cands (sorted by ID) by binary
// search, and whether it is there.
func candidateIndex(cands []Candidate, id string) (int, bool) {
	return slices.BinarySearchFunc(cands, id, func(c Candidate, id string) int {
		return strings.Compare(c.ID, id)
	})
}

func (p *SmoothWeightedRoundRobin) clone() Picker {
	return &SmoothWeightedRoundRobin{Current: maps.Clone(p.Current)}
}
