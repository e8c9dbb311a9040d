package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// testLargePool dispatches into a pool of 1500 Scales: batches from 1 order
// to the largest the Service allows, and completions as large, each batch
// equal to balancing.WaterfillIDs of the loads before it. Stores that write
// in chunks (Redis's Lua cannot unpack more than ~8000 values) must cross
// their chunk boundaries here.
func testLargePool(t *testing.T, s dispatch.Store) {
	const scales = 1500
	rng := rand.New(rand.NewPCG(3, 4))
	newPool(t, s, "p1", "")
	for i := range scales {
		putScale(t, s, "p1", fmt.Sprintf("s%04d", i), dispatch.ScaleSpec{OrderCount: ptr(int64(rng.IntN(50)))}, t0)
	}
	var assigned []string
	for step, m := range []int{dispatch.DefaultMaxBatch, 1, 7, 700} {
		want := strings.Join(balancing.WaterfillIDs(eligibleLoads(t, s, "p1"), m), " ")
		b := mustDispatch(t, s, request("p1", fmt.Sprint("b", step), at(time.Duration(step)*time.Second), ids(fmt.Sprintf("s%d-", step), m)...))
		if got := compIDs(b); got != want {
			t.Fatalf("batch %d of %d orders: the assignments differ from balancing.WaterfillIDs", step, m)
		}
		checkLevel(t, s, "p1", b)
		for _, a := range b.Assignments {
			assigned = append(assigned, a.OrderID)
		}
		if step == 0 {
			cs := make([]dispatch.Completion, 9000)
			for i, id := range assigned[:9000] {
				cs[i] = dispatch.Completion{OrderID: id, DurationMs: int64(i % 300)}
			}
			_, n, err := s.Complete(ctx, "p1", cs, at(time.Second/2))
			if err != nil || n != 9000 {
				t.Fatalf("Complete 9000: got %d, %v, want 9000, nil", n, err)
			}
			assigned = assigned[9000:]
		}
	}

	// Pages of 100 over many equal counts list every Scale once, in order.
	all := formatScales(allScales(t, s, "p1"))
	var pages []string
	for cursor := ""; ; {
		page, next, err := s.ListScales(ctx, "p1", dispatch.Page{Cursor: cursor, Limit: 100})
		if err != nil {
			t.Fatalf("ListScales: %v", err)
		}
		pages = append(pages, formatScales(page))
		if next == "" {
			break
		}
		cursor = next
	}
	if got := strings.Join(pages, " "); got != all || len(pages) != scales/100 {
		t.Errorf("pages of 100: got %d pages listing %d bytes, want %d pages listing %d", len(pages), len(got), scales/100, len(all))
	}
}
