package balancing_test

import (
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// max53 is the largest random number a pick receives, 2^53 − 1.
const max53 = 1<<53 - 1

func TestRandomVectors(t *testing.T) {
	tests := []struct {
		name  string
		cands string
		r1    []uint64
		want  string
	}{
		{name: "index r1 mod n", cands: "A B C D E", r1: []uint64{0, 1, 2, 3, 4, 5, 6}, want: "A B C D E A B"},
		// 2^53 − 1 = 9007199254740991 ≡ 1 (mod 5).
		{name: "largest r1", cands: "A B C D E", r1: []uint64{max53}, want: "B"},
		{name: "ignores weight and load", cands: "A=9/9 B", r1: []uint64{0, 0}, want: "A A"},
		{name: "single Scale", cands: "A", r1: []uint64{0, 7, max53}, want: "A A A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runString(t, balancing.Random{}, tt.cands, len(tt.r1), withR1(tt.r1...)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWeightedRandomVectors(t *testing.T) {
	r0to20 := make([]uint64, 21)
	for i := range r0to20 {
		r0to20[i] = uint64(i)
	}
	tests := []struct {
		name  string
		cands string
		r1    []uint64
		want  string
	}{
		{
			// Seed 001's weights: t = 0..19 walks the axis, 20 wraps.
			name:  "seed 001 axis",
			cands: "A/4 B/6 C/3 D/2 E/5",
			r1:    r0to20,
			want:  "A A A A B B B B B B C C C D D E E E E E A",
		},
		// 2^53 − 1 ≡ 11 (mod 20): past A (4) and B (10), inside C (13).
		{name: "largest r1", cands: "A/4 B/6 C/3 D/2 E/5", r1: []uint64{max53}, want: "C"},
		// Seed 004's Dubbo example: weights 1,2,3,4 on an axis of 10.
		{name: "seed 004", cands: "A/1 B/2 C/3 D/4", r1: []uint64{0, 1, 2, 3, 5, 6, 9}, want: "A B B C C D D"},
		{name: "equal weights", cands: "A/3 B/3", r1: []uint64{2, 3, 5, 6}, want: "A B B A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runString(t, balancing.WeightedRandom{}, tt.cands, len(tt.r1), withR1(tt.r1...)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// chiSquareCritical4 is the chi-square critical value for 4 degrees of
// freedom at significance 0.001: a fair picker exceeds it once in a thousand
// seeds, so with a fixed seed the test is deterministic and a failure means
// a biased rule, not bad luck.
const chiSquareCritical4 = 18.467

func TestRandomDistributions(t *testing.T) {
	const orders = 100_000
	tests := []struct {
		name  string
		p     balancing.Picker
		cands string
		share []float64
	}{
		{name: "random", p: balancing.Random{}, cands: "A/4 B/6 C/3 D/2 E/5", share: []float64{1, 1, 1, 1, 1}},
		{name: "weighted random", p: balancing.WeightedRandom{}, cands: "A/4 B/6 C/3 D/2 E/5", share: []float64{4, 6, 3, 2, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := parseCands(t, tt.cands)
			counts := tally(cands, balancing.Run(tt.p, cands, orders, randoms(1, 2*orders)))
			stat := chiSquare(counts, tt.share)
			t.Logf("counts %v: chi-square %.2f", counts, stat)
			if stat > chiSquareCritical4 {
				t.Errorf("counts %v for shares %v: chi-square %.2f, want <= %.3f", counts, tt.share, stat, chiSquareCritical4)
			}
		})
	}
}

// TestChiSquareDetectsBias checks that the distribution test has teeth: a
// weighted pick that ignores one Scale's weight fails it.
func TestChiSquareDetectsBias(t *testing.T) {
	const orders = 100_000
	cands := parseCands(t, "A/4 B/6 C/3 D/2 E/5")
	counts := tally(cands, balancing.Run(balancing.Random{}, cands, orders, randoms(1, 2*orders)))
	if stat := chiSquare(counts, []float64{4, 6, 3, 2, 5}); stat <= chiSquareCritical4 {
		t.Errorf("uniform picks against weights 4,6,3,2,5: chi-square %.2f, want > %.3f", stat, chiSquareCritical4)
	}
}
