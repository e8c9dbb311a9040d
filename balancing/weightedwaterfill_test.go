package balancing_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestWeightedWaterfill(t *testing.T) {
	tests := []struct {
		name  string
		cands string
		m     int
		want  string
		after string
	}{
		// DESIGN §3's vector. (Count+1)/Weight: A 2/2 < B 6/3; A 3/2 < 2;
		// A 4/2 = B 6/3, tie to A; then B 6/3 < A 5/2, B 7/3 < 5/2, and
		// A 5/2 < B 8/3.
		{name: "weights 2,3, counts 1,5", cands: "A=1/2 B=5/3", m: 6, want: "A A A B B A", after: "A=5/2 B=7/3"},
		{name: "weights 1,2 from empty", cands: "A B/2", m: 6, want: "B A B B A B", after: "A=2/1 B=4/2"},
		{name: "equal weights: lowest count, ties by compId", cands: "A B C", m: 4, want: "A B C A", after: "A=2/1 B=1/1 C=1/1"},
		{name: "fills up the emptiest first", cands: "A=7 B/3 C=3/2", m: 8, want: "B B B B B B C B", after: "A=7/1 B=7/3 C=4/2"},
		{name: "single Scale", cands: "A=4/9", m: 2, want: "A A", after: "A=6/9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := parseCands(t, tt.cands)
			if got := strings.Join(balancing.Run(balancing.WeightedWaterfill{}, cands, tt.m, nil), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got := formatCands(cands); got != tt.after {
				t.Errorf("after: got %q, want %q", got, tt.after)
			}
		})
	}
}

// TestWeightedWaterfillLevel: a Scale that received orders ends at most one
// order above any other's level, Count/Weight <= (o.Count+1)/o.Weight (its
// last order went there because that was the lowest (Count+1)/Weight). With
// equal weights that is waterfill's water level: at most 1 above the lowest.
func TestWeightedWaterfillLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 200 {
		cands := make([]balancing.Candidate, 1+rng.IntN(8))
		for i := range cands {
			cands[i] = balancing.Candidate{ID: string(rune('A' + i)), Count: rng.Int64N(20), Weight: 1 + rng.Int64N(5)}
		}
		before := formatCands(cands)
		got := map[string]bool{}
		for _, id := range balancing.Run(balancing.WeightedWaterfill{}, cands, rng.IntN(60), nil) {
			got[id] = true
		}
		for _, c := range cands {
			if !got[c.ID] {
				continue
			}
			for _, o := range cands {
				if c.Count*o.Weight > (o.Count+1)*c.Weight {
					t.Fatalf("trial %d from %s: %s ends above %s's next level", trial, before, c, o)
				}
			}
		}
	}
}
