package balancing_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// parseCands reads candidates written as "ID[=Count][/Weight][@AvgMs]",
// e.g. "A=1/2 B/3 C@12.5": Count defaults to 0 and Weight to 1. They must be
// given in ID order, as Pickers receive them.
func parseCands(tb testing.TB, s string) []balancing.Candidate {
	tb.Helper()
	var cands []balancing.Candidate
	for _, f := range strings.Fields(s) {
		c := balancing.Candidate{Weight: 1}
		if rest, avg, ok := strings.Cut(f, "@"); ok {
			v, err := strconv.ParseFloat(avg, 64)
			if err != nil {
				tb.Fatalf("parseCands %q: %v", f, err)
			}
			c.AvgMs, c.HasAvg, f = v, true, rest
		}
		if rest, w, ok := strings.Cut(f, "/"); ok {
			c.Weight, f = mustInt(tb, w), rest
		}
		if rest, n, ok := strings.Cut(f, "="); ok {
			c.Count, f = mustInt(tb, n), rest
		}
		c.ID = f
		cands = append(cands, c)
	}
	if !slices.IsSortedFunc(cands, func(a, b balancing.Candidate) int { return strings.Compare(a.ID, b.ID) }) {
		tb.Fatalf("parseCands %q: not in ID order", s)
	}
	return cands
}

func mustInt(tb testing.TB, s string) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		tb.Fatalf("parseCands: %v", err)
	}
	return n
}

// formatCands writes candidates as parseCands reads them back.
func formatCands(cands []balancing.Candidate) string {
	parts := make([]string, len(cands))
	for i, c := range cands {
		parts[i] = c.String()
	}
	return strings.Join(parts, " ")
}

// runString runs m orders with p over the candidates written in spec and
// returns the picks joined by spaces.
func runString(tb testing.TB, p balancing.Picker, spec string, m int, rnd []uint64) string {
	tb.Helper()
	return strings.Join(balancing.Run(p, parseCands(tb, spec), m, rnd), " ")
}

// withR1 returns the random numbers of Run for orders whose r1 are given and
// whose r2 are 0.
func withR1(r1s ...uint64) []uint64 {
	rnd := make([]uint64, 0, 2*len(r1s))
	for _, r := range r1s {
		rnd = append(rnd, r, 0)
	}
	return rnd
}

// randoms returns n uniform integers in [0, 2^53) from a PCG seeded with
// seed, as the service draws them.
func randoms(seed uint64, n int) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	rnd := make([]uint64, n)
	for i := range rnd {
		rnd[i] = rng.Uint64() >> 11
	}
	return rnd
}

// runsOf writes one-letter picks as runs of equal letters, "AAAA BBBBBB CCC".
func runsOf(ids []string) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 && id != ids[i-1] {
			b.WriteByte(' ')
		}
		b.WriteString(id)
	}
	return b.String()
}

// tally counts the picks of each candidate, in cands order.
func tally(cands []balancing.Candidate, ids []string) []int {
	counts := make([]int, len(cands))
	for _, id := range ids {
		i := slices.IndexFunc(cands, func(c balancing.Candidate) bool { return c.ID == id })
		counts[i]++
	}
	return counts
}

// chiSquare returns Pearson's statistic for observed counts against
// expected proportions (which need not sum to 1).
func chiSquare(observed []int, proportions []float64) float64 {
	n, sum := 0, 0.0
	for i := range observed {
		n += observed[i]
		sum += proportions[i]
	}
	stat := 0.0
	for i, o := range observed {
		e := float64(n) * proportions[i] / sum
		d := float64(o) - e
		stat += d * d / e
	}
	return stat
}
