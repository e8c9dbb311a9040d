package balancing_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// namedPicker makes fresh values of one strategy that is a Picker.
type namedPicker struct {
	name string
	new  func() balancing.Picker
}

// pickers lists every strategy that is a Picker.
func pickers() []namedPicker {
	return []namedPicker{
		{"random", func() balancing.Picker { return balancing.Random{} }},
		{"weighted-random", func() balancing.Picker { return balancing.WeightedRandom{} }},
		{"round-robin", func() balancing.Picker { return &balancing.RoundRobin{} }},
		{"weighted-round-robin", func() balancing.Picker { return &balancing.WeightedRoundRobin{} }},
		{"smooth-weighted-round-robin", func() balancing.Picker { return &balancing.SmoothWeightedRoundRobin{} }},
		{"weighted-response-time", func() balancing.Picker { return &balancing.WeightedResponseTime{} }},
		{"least-connections", func() balancing.Picker { return &balancing.LeastConnections{} }},
		{"power-of-two", func() balancing.Picker { return balancing.PowerOfTwo{} }},
		{"weighted-waterfill", func() balancing.Picker { return balancing.WeightedWaterfill{} }},
	}
}

func TestCandidateString(t *testing.T) {
	tests := []struct {
		c    balancing.Candidate
		want string
	}{
		{balancing.Candidate{ID: "A", Count: 3, Weight: 2}, "A=3/2"},
		{balancing.Candidate{ID: "B", Weight: 1, AvgMs: 12.5, HasAvg: true}, "B=0/1@12.5"},
		{balancing.Candidate{ID: "C", Weight: 1, AvgMs: 7}, "C=0/1"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestSingleCandidate(t *testing.T) {
	for _, tt := range pickers() {
		t.Run(tt.name, func(t *testing.T) {
			p, cands := tt.new(), parseCands(t, "S=5/3@20")
			for _, r := range randoms(6, 20) {
				if got := p.Pick(cands, r, max53-r); got != 0 {
					t.Fatalf("Pick = %d, want 0", got)
				}
				cands[0].Count++
			}
		})
	}
}

// TestScalesComeAndGo runs every strategy over a pool whose eligible Scales
// change before every pick, as Scales fill up, drain and return: every pick
// is a valid index, and the same inputs give the same picks even though Go
// randomises map order (a strategy that iterated a map for order would
// differ between the runs).
func TestScalesComeAndGo(t *testing.T) {
	for _, tt := range pickers() {
		t.Run(tt.name, func(t *testing.T) {
			var first []string
			for run := range 5 {
				p := tt.new()
				rng := rand.New(rand.NewPCG(7, 7))
				all := make([]balancing.Candidate, 12)
				for i := range all {
					all[i] = balancing.Candidate{ID: string(rune('A' + i)), Weight: 1 + rng.Int64N(5), AvgMs: float64(rng.IntN(100)), HasAvg: rng.IntN(3) > 0}
				}
				var picks []string
				for range 500 {
					var cands []balancing.Candidate
					for _, c := range all {
						if rng.IntN(4) > 0 {
							cands = append(cands, c)
						}
					}
					if len(cands) == 0 {
						continue
					}
					i := p.Pick(cands, rng.Uint64()>>11, rng.Uint64()>>11)
					if i < 0 || i >= len(cands) {
						t.Fatalf("Pick = %d over %d candidates", i, len(cands))
					}
					picks = append(picks, cands[i].ID)
					all[cands[i].ID[0]-'A'].Count++
				}
				if run == 0 {
					first = picks
				} else if !slices.Equal(picks, first) {
					t.Fatalf("run %d picked differently from run 0", run)
				}
			}
		})
	}
}

func TestRun(t *testing.T) {
	cands := parseCands(t, "A B")
	if got := balancing.Run(balancing.Random{}, cands, 3, withR1(1, 1, 0)); !slices.Equal(got, []string{"B", "B", "A"}) {
		t.Errorf("got %v, want [B B A]", got)
	}
	if got, want := formatCands(cands), "A=1/1 B=2/1"; got != want {
		t.Errorf("counts after Run: got %q, want %q", got, want)
	}
	if got := balancing.Run(balancing.Random{}, nil, 3, nil); got != nil {
		t.Errorf("Run over no candidates = %v, want nil", got)
	}
	for name, f := range map[string]func(){
		"negative m":   func() { balancing.Run(balancing.Random{}, cands, -1, nil) },
		"short rnd":    func() { balancing.Run(balancing.Random{}, cands, 2, []uint64{1, 2, 3}) },
		"total weight": func() { balancing.Run(balancing.WeightedRandom{}, parseCands(t, "A/0"), 1, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("did not panic")
				}
			}()
			f()
		})
	}
}
