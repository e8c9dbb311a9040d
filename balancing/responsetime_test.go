package balancing_test

import (
	"math"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestEWMA(t *testing.T) {
	tests := []struct {
		name   string
		avg    float64
		has    bool
		sample int64
		want   float64
	}{
		{name: "first sample sets it", avg: 0, has: false, sample: 100, want: 100},
		{name: "first sample ignores a stale avg", avg: 55, has: false, sample: 7, want: 7},
		{name: "a fifth of the way", avg: 100, has: true, sample: 50, want: 90},
		{name: "upwards", avg: 100, has: true, sample: 200, want: 120},
		{name: "same sample", avg: 42, has: true, sample: 42, want: 42},
		// The operation order shows: 0.8*avg + 0.2*x gives 1.2000000000000002.
		{name: "operation order", avg: 1, has: true, sample: 2, want: 1.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := balancing.EWMA(tt.avg, tt.has, tt.sample); got != tt.want {
				t.Errorf("EWMA(%v, %v, %d) = %v, want %v", tt.avg, tt.has, tt.sample, got, tt.want)
			}
		})
	}
}

// TestEWMABits is a vector for the Lua port, computed independently (Python
// floats, IEEE 754 doubles without fused operations): the average after
// samples 100, 37, 250, 3, 18, bit for bit.
func TestEWMABits(t *testing.T) {
	avg, has := 0.0, false
	for _, s := range []int64{100, 37, 250, 3, 18} {
		avg, has = balancing.EWMA(avg, has, s), true
	}
	if got, want := math.Float64bits(avg), uint64(0x4054350b0f27bb31); got != want {
		t.Errorf("got %v (%#x), want 80.82880000000002 (%#x)", avg, got, want)
	}
}

// r1At returns the r1 that makes u = x·W for a dyadic x in [0, 1).
func r1At(x float64) uint64 { return uint64(x * (1 << 53)) }

func TestWeightedResponseTime(t *testing.T) {
	tests := []struct {
		name  string
		last  string // RR.Last before the batch
		cands string
		r1    []uint64
		want  string
	}{
		// Weights 110-100 = 10 and 110-10 = 100: A holds [0, 10), B [10, 110).
		{name: "two Scales", cands: "A@100 B@10", r1: []uint64{0, r1At(0.0625), r1At(0.125), r1At(0.5), max53}, want: "A A B B B"},
		// C counts with the mean 55: weights 65, 155, 110 on an axis of 330.
		{name: "no data counts with the mean", cands: "A@100 B@10 C", r1: []uint64{r1At(0.125), r1At(0.5), r1At(0.75)}, want: "A B C"},
		// Ribbon's >= would give A, of weight 0, for u = 0.
		{name: "weight 0 never picked", cands: "A@10 B@0", r1: []uint64{0, max53}, want: "B B"},
		{name: "ignores load and weight", cands: "A=99/9@100 B@10", r1: []uint64{r1At(0.5)}, want: "B"},
		{name: "no data: round robin", cands: "A B C", r1: []uint64{max53, 0, 0, 0}, want: "A B C A"},
		{name: "one with data: round robin", last: "A", cands: "A@5 B C", r1: []uint64{0, 0, 0}, want: "B C A"},
		{name: "all averages 0: round robin", cands: "A@0 B@0", r1: []uint64{0, max53, 0}, want: "A B A"},
		{name: "single Scale", cands: "A@3", r1: []uint64{0, max53}, want: "A A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &balancing.WeightedResponseTime{RR: balancing.RoundRobin{Last: tt.last}}
			if got := runString(t, p, tt.cands, len(tt.r1), withR1(tt.r1...)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWeightedResponseTimePortVector is a vector for the Lua port, computed
// independently (Python floats, the same operations in the same order):
// mean 115.26750000000001 for C, accumulated weights 488.9375000000001,
// 945.3550000000002, 1406.4250000000002, 1979.2625000000003 and
// 2305.3500000000004; 1910320552460547 and …48 fall on either side of A's end.
func TestWeightedResponseTimePortVector(t *testing.T) {
	r1 := []uint64{
		0, 1234567890123456, 4503599627370496, 7000000000000000, max53,
		2251799813685248, 5555555555555555, 1910320552460547, 1910320552460548,
	}
	cands := "A@87.4 B@119.92000000000002 C D@3.5 E@250.25"
	got := runString(t, &balancing.WeightedResponseTime{}, cands, len(r1), withR1(r1...))
	if want := "A A C D E B D A B"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestWeightedResponseTimeRoundRobinResumes: the fallback's cursor stays
// where it was while the weighted draw picks.
func TestWeightedResponseTimeRoundRobinResumes(t *testing.T) {
	p := &balancing.WeightedResponseTime{}
	runSteps(t, p, []batchStep{
		{cands: "A B C", m: 2, want: "A B"},
		{cands: "A@100 B@10 C", m: 1, want: "A"}, // r1 0 draws A
	})
	if p.RR.Last != "B" {
		t.Errorf("RR.Last %q, want B", p.RR.Last)
	}
	runSteps(t, p, []batchStep{{cands: "A@100 B C", m: 2, want: "C A"}})
}

// chiSquareCritical1 is the chi-square critical value for 1 degree of
// freedom at significance 0.001.
const chiSquareCritical1 = 10.828

// TestWeightedResponseTimeRatio: 100 ms against 10 ms gives weights 10 and
// 100, so picks in the ratio 1:10.
func TestWeightedResponseTimeRatio(t *testing.T) {
	const orders = 110_000
	cands := parseCands(t, "A@100 B@10")
	counts := tally(cands, balancing.Run(&balancing.WeightedResponseTime{}, cands, orders, randoms(2, 2*orders)))
	stat := chiSquare(counts, []float64{1, 10})
	t.Logf("counts %v: chi-square %.2f", counts, stat)
	if stat > chiSquareCritical1 {
		t.Errorf("counts %v for 1:10: chi-square %.2f, want <= %.3f", counts, stat, chiSquareCritical1)
	}
}

// TestWeightedResponseTimeTinyAverages: averages decayed towards 0 (down to
// subnormal numbers) fall back to round robin instead of drawing on an axis
// too short to hold u < W.
func TestWeightedResponseTimeTinyAverages(t *testing.T) {
	cands := []balancing.Candidate{
		{ID: "A", Weight: 1, AvgMs: math.SmallestNonzeroFloat64, HasAvg: true},
		{ID: "B", Weight: 1, AvgMs: 0, HasAvg: true},
		{ID: "C", Weight: 1, AvgMs: 0.0001, HasAvg: true},
	}
	p := &balancing.WeightedResponseTime{}
	for i, want := range []int{0, 1, 2, 0} {
		if got := p.Pick(cands, max53, 0); got != want {
			t.Fatalf("pick %d: got %d, want %d (round robin)", i, got, want)
		}
	}
}
