package balancing_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

// randomLoads returns n Loads with distinct random ids and counts drawn from
// one of several shapes: small, wide, all equal, large, and just below the
// 2^31-1 ceiling.
func randomLoads(rng *rand.Rand, n int) []balancing.Load {
	const alphabet = "ABab019._:-"
	var counts func() int64
	switch rng.IntN(5) {
	case 0:
		counts = func() int64 { return rng.Int64N(4) }
	case 1:
		counts = func() int64 { return rng.Int64N(1000) }
	case 2:
		v := rng.Int64N(balancing.LastLevel + 1)
		counts = func() int64 { return v }
	case 3:
		counts = func() int64 { return rng.Int64N(balancing.LastLevel + 1) }
	default:
		counts = func() int64 { return balancing.LastLevel - rng.Int64N(300) }
	}
	seen := make(map[string]bool, n)
	loads := make([]balancing.Load, 0, n)
	for len(loads) < n {
		id := make([]byte, 1+rng.IntN(4))
		for i := range id {
			id[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if seen[string(id)] {
			continue
		}
		seen[string(id)] = true
		loads = append(loads, balancing.Load{ID: string(id), Count: counts()})
	}
	return loads
}

func TestWaterfillMatchesSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 5000 {
		loads := randomLoads(rng, 1+rng.IntN(50))
		m := rng.IntN(301)
		sorted := balancing.SortLoads(slices.Clone(loads))

		want := seedRanks(sorted, m)
		got := waterfillRanks(sorted, m)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d, %d orders over %v:\ngot  %v\nwant %v", trial, m, sorted, got, want)
		}
		if n := balancing.Waterfill(sorted, m, func(int) bool { return true }); n != m {
			t.Fatalf("trial %d: Waterfill returned %d, want %d", trial, n, m)
		}

		seed := newSeedDispatcher(sorted)
		ids, counts := balancing.Table(sorted)
		if !slices.Equal(ids, seed.compIDArr) || !slices.Equal(counts, seed.dispatchCountArr) {
			t.Fatalf("trial %d: Table got %v %v, want %v %v", trial, ids, counts, seed.compIDArr, seed.dispatchCountArr)
		}

		checkWaterLevel(t, sorted, got)
	}
}

// checkWaterLevel checks the property of DESIGN §2: after the batch, no Scale
// that received orders is more than 1 above the lowest count.
func checkWaterLevel(t testing.TB, sorted balancing.Sorted, ranks []int) {
	t.Helper()
	after := slices.Clone(sorted)
	received := make([]bool, len(after))
	for _, r := range ranks {
		after[r].Count++
		received[r] = true
	}
	if len(after) == 0 {
		return
	}
	low := slices.MinFunc(after, func(a, b balancing.Load) int { return cmp.Compare(a.Count, b.Count) }).Count
	for i, l := range after {
		if received[i] && l.Count > low+1 {
			t.Fatalf("%v after %d orders over %v: more than 1 above the lowest count %d", l, len(ranks), sorted, low)
		}
	}
}
