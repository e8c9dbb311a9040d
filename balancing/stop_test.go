package balancing_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
)

func TestWaterfillStopsWhenPickSaysSo(t *testing.T) {
	loads := parseLoads("S1=1 S2=5 S3=12")
	s := balancing.SortLoads(slices.Clone(loads))
	var ids []string
	n := balancing.Waterfill(s, 22, func(rank int) bool {
		ids = append(ids, s[rank].ID)
		return len(ids) < 5
	})
	if n != 5 {
		t.Fatalf("got %d orders, want 5", n)
	}
	if got, want := strings.Join(ids, " "), "S1 S1 S1 S1 S1"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	// Resume the remaining 17 orders over a table rebuilt from the new loads.
	addOrders(loads, ids)
	if got, want := formatLoads(loads), "S1=6 S2=5 S3=12"; got != want {
		t.Fatalf("loads after the stop: got %q, want %q", got, want)
	}
	rest := balancing.WaterfillIDs(slices.Clone(loads), 17)
	want := "S2 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S1 S2 S3 S1"
	if got := strings.Join(rest, " "); got != want {
		t.Errorf("resumed: got %q, want %q", got, want)
	}
	if got, oracle := strings.Join(rest, " "), oracleIDs(slices.Clone(loads), 17); got != oracle {
		t.Errorf("resumed: got %q, seed gives %q", got, oracle)
	}
	// The rebuilt table ranks S2 before S1, so the last odd order lands on
	// S1 where one batch of 22 would put it on S2.
	addOrders(loads, rest)
	if got, want := formatLoads(loads), "S1=14 S2=13 S3=13"; got != want {
		t.Errorf("loads after the batch: got %q, want %q", got, want)
	}
}

// waterfillFunc is the signature shared by Waterfill and the seed port.
type waterfillFunc func(r balancing.Ranked, m int, pick func(rank int) bool) int

// cappedIDs dispatches m orders over loads where a Scale with a positive cap
// takes no orders once its Count reaches it: as DESIGN §2 says, a Scale that
// fills up leaves the table, which is rebuilt for the remaining orders.
func cappedIDs(loads []balancing.Load, caps map[string]int64, m int, run waterfillFunc) []string {
	loads = slices.Clone(loads)
	at := make(map[string]int, len(loads))
	for i, l := range loads {
		at[l.ID] = i
	}
	full := func(l balancing.Load) bool { return caps[l.ID] > 0 && l.Count >= caps[l.ID] }
	var ids []string
	for len(ids) < m {
		s := balancing.SortLoads(slices.DeleteFunc(slices.Clone(loads), full))
		n := run(s, m-len(ids), func(rank int) bool {
			l := &loads[at[s[rank].ID]]
			l.Count++
			ids = append(ids, l.ID)
			return !full(*l)
		})
		if n == 0 {
			break
		}
	}
	return ids
}

func TestWaterfillRebuiltMatchesSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		loads := randomLoads(rng, 1+rng.IntN(20))
		caps := make(map[string]int64)
		for _, l := range loads {
			if rng.IntN(2) == 0 {
				caps[l.ID] = l.Count + rng.Int64N(10)
			}
		}
		m := rng.IntN(200)
		got := cappedIDs(loads, caps, m, balancing.Waterfill)
		want := cappedIDs(loads, caps, m, seedWaterfill)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d, %d orders over %v with caps %v:\ngot  %v\nwant %v", trial, m, loads, caps, got, want)
		}
		after := slices.Clone(loads)
		addOrders(after, got)
		for _, l := range after {
			if c := caps[l.ID]; c > 0 && l.Count > max(c, loadOf(loads, l.ID)) {
				t.Fatalf("trial %d: %v above its cap %d", trial, l, c)
			}
		}
	}
}

// loadOf returns the Count of the load with id.
func loadOf(loads []balancing.Load, id string) int64 {
	i := slices.IndexFunc(loads, func(l balancing.Load) bool { return l.ID == id })
	return loads[i].Count
}
