package memory_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/store/memory"
)

// TestRanking applies random batches of moves, small and large, to a
// Ranking and checks every read against a sorted copy. It grows the ranking
// to a few thousand entries, churns it, and shrinks it to nothing, so that
// blocks split, join and disappear.
func TestRanking(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var r memory.Ranking
	in := make(map[string]int64) // the reference: id → count
	phases := []struct {
		steps      int
		grow, keep int // out of 10: add an absent id; keep a present one
		large      int // out of 30: a large batch, which merges
	}{{400, 10, 8, 0}, {200, 5, 7, 3}, {200, 0, 3, 1}}
	for p, ph := range phases {
		for step := range ph.steps {
			k := 1 + rng.IntN(8)
			if rng.IntN(30) < ph.large {
				k = 1 + rng.IntN(400)
			}
			var moves []memory.Move
			touched := make(map[string]bool)
			for range k {
				id := fmt.Sprintf("s%04d", rng.IntN(4000))
				count, was := in[id]
				if touched[id] || (!was && rng.IntN(10) >= ph.grow) {
					continue
				}
				touched[id] = true
				m := memory.Move{From: balancing.Load{ID: id, Count: count}, WasIn: was}
				switch {
				case !was:
					m.IsIn, m.To = true, balancing.Load{ID: id, Count: int64(rng.IntN(20))}
					in[id] = m.To.Count
				case rng.IntN(10) < ph.keep:
					m.IsIn, m.To = true, balancing.Load{ID: id, Count: max(0, count+int64(rng.IntN(7))-2)}
					in[id] = m.To.Count
				default:
					delete(in, id)
				}
				moves = append(moves, m)
			}
			r.Apply(moves)
			checkRanking(t, rng, fmt.Sprintf("phase %d step %d", p, step), &r, in)
		}
	}
	// Remove the rest a few at a time, from the lowest.
	rest := r.Scan(0)
	for len(rest) > 0 {
		n := min(len(rest), 1+rng.IntN(12))
		var moves []memory.Move
		for _, l := range rest[:n] {
			moves = append(moves, memory.Move{From: l, WasIn: true})
			delete(in, l.ID)
		}
		r.Apply(moves)
		checkRanking(t, rng, fmt.Sprintf("%d left", len(rest)-n), &r, in)
		rest = rest[n:]
	}
}

func checkRanking(t *testing.T, rng *rand.Rand, what string, r *memory.Ranking, in map[string]int64) {
	t.Helper()
	var want []balancing.Load
	for id, c := range in {
		want = append(want, balancing.Load{ID: id, Count: c})
	}
	ref := balancing.SortLoads(want)
	got := r.Ranked()
	if got.Len() != ref.Len() {
		t.Fatalf("%s: got Len %d, want %d", what, got.Len(), ref.Len())
	}
	if all := r.Scan(0); !slices.Equal(all, ref) {
		t.Fatalf("%s: entries differ from the sorted reference", what)
	}
	for range 20 {
		if len(ref) > 0 {
			i := rng.IntN(len(ref))
			if got.At(i) != ref[i] {
				t.Fatalf("%s: got At(%d) %v, want %v", what, i, got.At(i), ref[i])
			}
		}
		c := int64(rng.IntN(40)) - 1
		if g, w := got.CountAtMost(c), ref.CountAtMost(c); g != w {
			t.Fatalf("%s: got CountAtMost(%d) %d, want %d", what, c, g, w)
		}
		l := balancing.Load{ID: fmt.Sprintf("s%04d", rng.IntN(4000)), Count: c}
		w := sort.Search(len(ref), func(i int) bool { return ref[i].Count > l.Count || ref[i].Count == l.Count && ref[i].ID > l.ID })
		if g := r.After(l); g != w {
			t.Fatalf("%s: got After(%v) %d, want %d", what, l, g, w)
		}
	}
	start := rng.IntN(len(ref) + 1)
	if g := r.Scan(start); len(g) != len(ref)-start || (len(g) > 0 && g[0] != ref[start]) {
		t.Fatalf("%s: Scan(%d) got %d entries, want %d", what, start, len(g), len(ref)-start)
	}
	for _, n := range r.BlockSizes() {
		if n < 1 || n > memory.MaxBlock {
			t.Fatalf("%s: got a block of %d entries, want 1 to %d", what, n, memory.MaxBlock)
		}
	}
}
