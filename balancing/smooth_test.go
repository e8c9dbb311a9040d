package balancing_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestSmoothWeightedRoundRobin(t *testing.T) {
	tests := []struct {
		name  string
		cands string
		m     int
		want  string
	}{
		{name: "seed 001 table and nginx", cands: "A/5 B/1 C/1", m: 7, want: "A A B A C A A"},
		{name: "periodic", cands: "A/5 B/1 C/1", m: 14, want: "A A B A C A A A A B A C A A"},
		{name: "seed 001 weights", cands: "A/4 B/6 C/3 D/2 E/5", m: 20,
			want: "B E A C B D E A B C E B A E B D C A E B"},
		{name: "equal weights", cands: "A B C", m: 4, want: "A B C A"},
		// Ties go to the first in compId order: A and B both stand at 2 on the first pick.
		{name: "ties", cands: "A/2 B/2 C/1", m: 5, want: "A B C A B"},
		{name: "ignores load", cands: "A=50/1 B/1", m: 2, want: "A B"},
		{name: "single Scale", cands: "A/7", m: 3, want: "A A A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runString(t, &balancing.SmoothWeightedRoundRobin{}, tt.cands, tt.m, nil); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSmoothWeightedRoundRobinTable replays seed 001's table: the current
// weights after each pick.
func TestSmoothWeightedRoundRobinTable(t *testing.T) {
	want := []string{
		"A:-2 B:1 C:1", "A:-4 B:2 C:2", "A:1 B:-4 C:3", "A:-1 B:-3 C:4",
		"A:4 B:-2 C:-2", "A:2 B:-1 C:-1", "A:0 B:0 C:0",
	}
	p := &balancing.SmoothWeightedRoundRobin{}
	cands := parseCands(t, "A/5 B/1 C/1")
	for i, w := range want {
		p.Pick(cands, 0, 0)
		if got := formatCurrent(cands, p.Current); got != w {
			t.Errorf("after pick %d: got %q, want %q", i+1, got, w)
		}
	}
}

// formatCurrent writes current weights in cands order, as "A:-2 B:1".
func formatCurrent(cands []balancing.Candidate, current map[string]int64) string {
	parts := make([]string, len(cands))
	for i, c := range cands {
		parts[i] = fmt.Sprintf("%s:%d", c.ID, current[c.ID])
	}
	return strings.Join(parts, " ")
}

// TestSmoothWeightedRoundRobinAcrossReplicas: batches served by different
// replicas, the state persisted in between, continue one sequence.
func TestSmoothWeightedRoundRobinAcrossReplicas(t *testing.T) {
	p := &balancing.SmoothWeightedRoundRobin{}
	var got []string
	for _, m := range []int{3, 1, 6, 4} {
		got = append(got, runString(t, p, "A/5 B/1 C/1", m, nil))
		p = reloadState(t, p)
	}
	if g, want := strings.Join(got, " "), "A A B A C A A A A B A C A A"; g != want {
		t.Errorf("got %q, want %q", g, want)
	}
}

// TestSmoothWeightedRoundRobinScalesComeAndGo: a Scale that leaves is
// forgotten, one that (re)joins starts at current weight 0.
func TestSmoothWeightedRoundRobinScalesComeAndGo(t *testing.T) {
	p := &balancing.SmoothWeightedRoundRobin{}
	runSteps(t, p, []batchStep{
		{cands: "A/5 B/1 C/1", m: 3, want: "A A B"}, // A:1 B:-4 C:3
		{cands: "A/5 C/1", m: 1, want: "A"},         // B forgotten: A:0 C:4
	})
	if _, ok := p.Current["B"]; ok {
		t.Errorf("Current %v still holds B after it left", p.Current)
	}
	// B back at 0: A 5, B 1, C 5; A wins the tie and gives 7 back.
	runSteps(t, p, []batchStep{{cands: "A/5 B/1 C/1", m: 2, want: "A C"}})
	if got, want := formatCurrent(parseCands(t, "A B C"), p.Current), "A:3 B:2 C:-1"; got != want {
		t.Errorf("Current %q, want %q", got, want)
	}
}

// TestSmoothWeightedRoundRobinCycles: for random weights, every Σw
// consecutive picks from the start give each Scale exactly its weight, and
// the current weights return to 0 — nginx's guarantee.
func TestSmoothWeightedRoundRobinCycles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for trial := range 200 {
		n := 1 + rng.IntN(8)
		cands := make([]balancing.Candidate, n)
		var total int64
		for i := range cands {
			cands[i] = balancing.Candidate{ID: string(rune('A' + i)), Weight: 1 + rng.Int64N(30)}
			total += cands[i].Weight
		}
		p := &balancing.SmoothWeightedRoundRobin{}
		for cycle := range 2 {
			counts := make([]int64, n)
			for range total {
				counts[p.Pick(cands, 0, 0)]++
			}
			for i, c := range cands {
				if counts[i] != c.Weight || p.Current[c.ID] != 0 {
					t.Fatalf("trial %d %s cycle %d: %s got %d picks, current %d; want %d, 0",
						trial, formatCands(cands), cycle, c.ID, counts[i], p.Current[c.ID], c.Weight)
				}
			}
		}
	}
}
