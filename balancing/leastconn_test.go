package balancing_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestLeastConnections(t *testing.T) {
	tests := []struct {
		name    string
		cands   string
		m       int
		want    string
		current string // current weights after the batch, in compId order
	}{
		// B lowest; then B and C tie at 3 (B by smooth round robin, the first
		// of the tie), C lowest, B and C tie at 4 (C: its current weight is
		// higher after the first tie).
		{name: "lowest, ties by smooth round robin", cands: "A=5 B=2 C=3", m: 4, want: "B B C C", current: "A:0 B:0 C:0"},
		// A at 4/2 = 2 against B at 3; A and B tie at 3 and at 4.
		{name: "per weight", cands: "A=4/2 B=3/1", m: 8, want: "A A A B A B A A", current: "A:1 B:-1"},
		{name: "from empty", cands: "A=0/2 B=0/1 C=0/1", m: 8, want: "A B C A C A B A", current: "A:-1 B:2 C:-1"},
		// A unique lowest every time: no current weight moves.
		{name: "unique lowest", cands: "A=0 B=9 C=9", m: 3, want: "A A A", current: "A:0 B:0 C:0"},
		{name: "single Scale", cands: "A=3/2", m: 2, want: "A A", current: "A:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &balancing.LeastConnections{}
			cands := parseCands(t, tt.cands)
			if got := strings.Join(balancing.Run(p, cands, tt.m, nil), " "); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got := formatCurrent(cands, p.Current); got != tt.current {
				t.Errorf("current %q, want %q", got, tt.current)
			}
		})
	}
}

// TestLeastConnectionsAllTied: when the loads stay tied (orders completed as
// fast as they come, so the caller never sees a count rise), least
// connections is nginx's smooth weighted round robin.
func TestLeastConnectionsAllTied(t *testing.T) {
	p := &balancing.LeastConnections{}
	cands := parseCands(t, "A=15/5 B=3/1 C=3/1")
	var got []string
	for range 7 {
		got = append(got, cands[p.Pick(cands, 0, 0)].ID)
	}
	if g, want := strings.Join(got, " "), "A A B A C A A"; g != want {
		t.Errorf("got %q, want %q", g, want)
	}
}

func TestLeastConnectionsScalesComeAndGo(t *testing.T) {
	p := &balancing.LeastConnections{}
	runSteps(t, p, []batchStep{{cands: "A B C", m: 2, want: "A B"}}) // A:-2 B:0 C:2
	runSteps(t, p, []batchStep{{cands: "A=1 C=0", m: 1, want: "C"}}) // C unique lowest
	if _, ok := p.Current["B"]; ok {
		t.Errorf("Current %v still holds B after it left", p.Current)
	}
	// All tied; B back at 0: A -1, B 1, C 3: C.
	runSteps(t, p, []batchStep{{cands: "A B C", m: 1, want: "C"}})
}

// TestLeastConnectionsPicksALowest checks on random loads and weights that
// every pick is a Scale of the lowest Count/Weight.
func TestLeastConnectionsPicksALowest(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	p := &balancing.LeastConnections{}
	for trial := range 300 {
		cands := make([]balancing.Candidate, 1+rng.IntN(6))
		for i := range cands {
			cands[i] = balancing.Candidate{ID: string(rune('A' + i)), Count: rng.Int64N(10), Weight: 1 + rng.Int64N(4)}
		}
		for range 10 {
			i := p.Pick(cands, 0, 0)
			for _, c := range cands {
				if c.Count*cands[i].Weight < cands[i].Count*c.Weight {
					t.Fatalf("trial %d: picked %s over %s in %s", trial, cands[i], c, formatCands(cands))
				}
			}
			cands[i].Count++
		}
	}
}
