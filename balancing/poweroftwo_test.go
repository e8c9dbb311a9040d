package balancing_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestPowerOfTwo(t *testing.T) {
	tests := []struct {
		name  string
		cands string
		rnd   []uint64 // r1, r2 per order
		want  string
	}{
		// a = 0, b = 0 + 1 (b >= a skips a): B is lower.
		{name: "b skips a", cands: "A=5 B=1 C=3", rnd: []uint64{0, 0}, want: "B"},
		// a = 2, b = 1: B is lower.
		{name: "b below a", cands: "A=5 B=1 C=3", rnd: []uint64{2, 1}, want: "B"},
		// a = 1, b = 1 + 1: B is lower than C.
		{name: "keeps a when lower", cands: "A=5 B=1 C=3", rnd: []uint64{1, 1}, want: "B"},
		// a = 1 (B), b = 0 (A): tied, a kept.
		{name: "ties to a", cands: "A=1 B=1", rnd: []uint64{1, 0}, want: "B"},
		// A at 2/1 against B at 3/2.
		{name: "per weight", cands: "A=2/1 B=3/2", rnd: []uint64{0, 0}, want: "B"},
		{name: "largest numbers", cands: "A B C D E", rnd: []uint64{max53, max53}, want: "B"},
		{name: "loads seen by later picks", cands: "A B", rnd: []uint64{0, 0, 0, 0, 0, 0}, want: "A B A"},
		{name: "single Scale", cands: "A=9", rnd: []uint64{5, 7, max53, max53}, want: "A A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runString(t, balancing.PowerOfTwo{}, tt.cands, len(tt.rnd)/2, tt.rnd); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPowerOfTwoPairsUniform: over r1 mod n and r2 mod (n−1), every ordered
// pair of distinct Scales comes up exactly once, so both draws are uniform
// and never the same Scale. Equal loads reveal a (ties go to a); raising a's
// load then reveals b.
func TestPowerOfTwoPairsUniform(t *testing.T) {
	const n = 5
	seen := map[[2]int]int{}
	for r1 := range uint64(n) {
		for r2 := range uint64(n - 1) {
			cands := parseCands(t, "A B C D E")
			a := balancing.PowerOfTwo{}.Pick(cands, r1, r2)
			cands[a].Count = 1
			b := balancing.PowerOfTwo{}.Pick(cands, r1, r2)
			if a != int(r1) || b == a {
				t.Fatalf("r1 %d, r2 %d: a = %d, b = %d; want a = r1 and b != a", r1, r2, a, b)
			}
			seen[[2]int{a, b}]++
		}
	}
	if len(seen) != n*(n-1) {
		t.Errorf("saw %d ordered pairs, want %d: %v", len(seen), n*(n-1), seen)
	}
}

// TestBallsIntoBins reproduces the balls-into-bins result: 1,000 orders
// into 1,000 empty Scales. Random's fullest Scale holds about
// ln n / ln ln n + … (5–7 here), power of two's ln ln n / ln 2 + O(1) (3–4).
func TestBallsIntoBins(t *testing.T) {
	const n = 1000
	tests := []struct {
		name     string
		p        balancing.Picker
		min, max int64
	}{
		{name: "random", p: balancing.Random{}, min: 5, max: 7},
		{name: "power of two", p: balancing.PowerOfTwo{}, min: 3, max: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var loads []int64
			for seed := range uint64(10) {
				cands := make([]balancing.Candidate, n)
				for i := range cands {
					cands[i] = balancing.Candidate{ID: fmt.Sprintf("S%04d", i), Weight: 1}
				}
				balancing.Run(tt.p, cands, n, randoms(100+seed, 2*n))
				most := slices.MaxFunc(cands, func(a, b balancing.Candidate) int { return int(a.Count - b.Count) })
				loads = append(loads, most.Count)
			}
			t.Logf("max loads over 10 seeds: %v", loads)
			for seed, l := range loads {
				if l < tt.min || l > tt.max {
					t.Errorf("seed %d: max load %d, want %d–%d", 100+seed, l, tt.min, tt.max)
				}
			}
		})
	}
}
