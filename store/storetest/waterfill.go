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

// seedSequence is the seed's worked example: counts S1=1, S2=5, S3=12 and
// 22 orders.
const seedSequence = "S1 S1 S1 S1 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S2 S1 S3 S2"

func testSeedExample(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "S1=1 S2=5 S3=12")
	tab, err := s.Table(ctx, "p1")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	wantString(t, "table before", formatTable(tab), "[S1 S2 S3] [4 14 2147483647]")

	req := request("p1", "b1", at(time.Second), ids("o", 22)...)
	req.Orders[0].Key = "cust-9"
	b := mustDispatch(t, s, req)
	wantString(t, "assignments", compIDs(b), seedSequence)
	wantString(t, "loads after", loads(t, s, "p1"), "S1=13 S2=14 S3=13")
	wantString(t, "outstanding of S2", fmt.Sprint(getScale(t, s, "p1", "S2").Outstanding), "9")
	wantString(t, "batch", fmt.Sprint(b.ID, " ", b.Pool, " ", b.Strategy, " ", formatTime(b.CreatedAt)),
		"b1 p1 waterfill 2025-03-01T12:00:01Z")
	got, err := s.GetBatch(ctx, "p1", "b1", t0)
	if err != nil {
		t.Fatalf("GetBatch: %v", err)
	}
	wantString(t, "GetBatch", formatBatch(got), formatBatch(b))
	for i, a := range b.Assignments {
		if a.OrderID != req.Orders[i].ID {
			t.Errorf("assignment %d: got order %s, want %s (request order)", i, a.OrderID, req.Orders[i].ID)
		}
		o := getOrder(t, s, "p1", a.OrderID)
		want := dispatch.Order{ID: a.OrderID, CompID: a.CompID, BatchID: "b1", Key: req.Orders[i].Key,
			State: dispatch.Assigned, AssignedAt: at(time.Second)}
		wantString(t, "GetOrder", formatOrder(o), formatOrder(want))
	}
	tab, err = s.Table(ctx, "p1")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	wantString(t, "table after", formatTable(tab), "[S1 S3 S2] [0 2 2147483647]")
}

func testBatchesDiffer(t *testing.T, s dispatch.Store) {
	newPool(t, s, "split", "S1=1 S2=5 S3=12")
	newPool(t, s, "whole", "S1=1 S2=5 S3=12")
	var split []string
	for i, n := range []int{22, 8} {
		want := strings.Join(balancing.WaterfillIDs(eligibleLoads(t, s, "split"), n), " ")
		b := mustDispatch(t, s, request("split", fmt.Sprint("b", i), t0, ids(fmt.Sprint("o", i, "-"), n)...))
		wantString(t, fmt.Sprintf("batch %d of split", i), compIDs(b), want)
		split = append(split, compIDs(b))
	}
	want := strings.Join(balancing.WaterfillIDs(eligibleLoads(t, s, "whole"), 30), " ")
	whole := compIDs(mustDispatch(t, s, request("whole", "b", t0, ids("o", 30)...)))
	wantString(t, "whole batch", whole, want)
	if strings.Join(split, " ") == whole {
		t.Errorf("22 then 8 orders: got %s, want something else than 30 at once", whole)
	}
}

// testDifferential dispatches many random batches into random pools, with
// completions, cancellations and load reports between them: every batch
// must be balancing.WaterfillIDs of the eligible loads just before it, and
// leave no Scale it loaded more than 1 above the lowest eligible Scale.
func testDifferential(t *testing.T, s dispatch.Store) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 99))
		pool := fmt.Sprint("p", seed)
		newPool(t, s, pool, "")
		// Every third pool is large enough for batches that touch many
		// Scales at once.
		size, maxBatch := 1+rng.IntN(25), 40
		if seed%3 == 0 {
			size, maxBatch = 40+rng.IntN(50), 150
		}
		perm := rng.Perm(100)
		for i := range size {
			spec := dispatch.ScaleSpec{OrderCount: ptr(int64(rng.IntN(40)))}
			switch r := rng.IntN(10); {
			case i == 0:
			case r == 0:
				spec.State = ptr(dispatch.Draining)
			case r == 1:
				spec.State = ptr(dispatch.Down)
			}
			putScale(t, s, pool, fmt.Sprintf("c%02d", perm[i]), spec, t0)
		}
		var assigned []string
		for step := range 30 {
			now := at(time.Duration(step) * time.Second)
			switch r := rng.IntN(10); {
			case r < 6:
				m := 1 + rng.IntN(maxBatch)
				want := balancing.WaterfillIDs(eligibleLoads(t, s, pool), m)
				req := request(pool, fmt.Sprint("b", step), now, ids(fmt.Sprintf("s%d-", step), m)...)
				b := mustDispatch(t, s, req)
				wantString(t, fmt.Sprintf("seed %d step %d", seed, step), compIDs(b), strings.Join(want, " "))
				checkLevel(t, s, pool, b)
				for _, a := range b.Assignments {
					assigned = append(assigned, a.OrderID)
				}
			case r < 8 && len(assigned) > 0:
				k := 1 + rng.IntN(min(len(assigned), maxBatch))
				rng.Shuffle(len(assigned), func(i, j int) { assigned[i], assigned[j] = assigned[j], assigned[i] })
				if r == 6 {
					cs := make([]dispatch.Completion, k)
					for i, id := range assigned[:k] {
						cs[i] = dispatch.Completion{OrderID: id, DurationMs: int64(rng.IntN(500))}
					}
					if _, _, err := s.Complete(ctx, pool, cs, now); err != nil {
						t.Fatalf("Complete: %v", err)
					}
				} else {
					for _, id := range assigned[:k] {
						if _, err := s.Cancel(ctx, pool, id, now); err != nil {
							t.Fatalf("Cancel: %v", err)
						}
					}
				}
				assigned = assigned[k:]
			default:
				scs := allScales(t, s, pool)
				putScale(t, s, pool, scs[rng.IntN(len(scs))].CompID, dispatch.ScaleSpec{OrderCount: ptr(int64(rng.IntN(60)))}, now)
			}
		}
	}
}

// checkLevel checks that no Scale that received orders in b stands more
// than 1 above the lowest eligible Scale.
func checkLevel(t testing.TB, s dispatch.Store, pool string, b dispatch.Batch) {
	t.Helper()
	got := make(map[string]bool)
	for _, a := range b.Assignments {
		got[a.CompID] = true
	}
	var lowest int64 = -1
	counts := make(map[string]int64)
	for _, l := range eligibleLoads(t, s, pool) {
		if lowest < 0 || l.Count < lowest {
			lowest = l.Count
		}
		counts[l.ID] = l.Count
	}
	for id := range got {
		if counts[id] > lowest+1 {
			t.Errorf("batch %s: Scale %s got orders and stands at %d, want at most %d", b.ID, id, counts[id], lowest+1)
		}
	}
}
