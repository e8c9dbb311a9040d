package balancing_test

import (
	"sort"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// countingRanked is a Ranked that counts the entries read through At,
// CountAtMost's binary search included, as a store-backed view would count
// round trips.
type countingRanked struct {
	s   balancing.Sorted
	ats int
}

func (c *countingRanked) Len() int { return len(c.s) }

func (c *countingRanked) At(rank int) balancing.Load {
	c.ats++
	return c.s[rank]
}

func (c *countingRanked) CountAtMost(v int64) int {
	return sort.Search(len(c.s), func(i int) bool { return c.At(i).Count > v })
}

func TestWaterfillReadsFewEntries(t *testing.T) {
	const n = 100_000
	equal := make([]balancing.Load, n)
	rising := make([]balancing.Load, n)
	for i := range n {
		id := string(rune('A'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + string(rune('a'+i/17576))
		equal[i] = balancing.Load{ID: id}
		rising[i] = balancing.Load{ID: id, Count: int64(i)}
	}
	tests := []struct {
		name  string
		loads []balancing.Load
		m     int
		first int
	}{
		{"one order, all equal", equal, 1, int(balancing.LastLevel % n)},
		{"ten orders, counts rising", rising, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &countingRanked{s: balancing.SortLoads(tt.loads)}
			ranks := waterfillRanks(r, tt.m)
			if len(ranks) != tt.m || ranks[0] != tt.first {
				t.Fatalf("got ranks %v, want %d starting with %d", ranks, tt.m, tt.first)
			}
			if r.ats >= 100 {
				t.Errorf("got %d calls to At over %d entries, want fewer than 100", r.ats, n)
			}
		})
	}
}
