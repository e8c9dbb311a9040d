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

func testMaxOrders(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0 C=0")
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(1))}, t0)
	// Without maxOrders the sequence would be B A C B A; A fills up after
	// its first order and the table is rebuilt over B=1 C=0.
	b := mustDispatch(t, s, request("p1", "b1", t0, ids("o", 5)...))
	wantString(t, "assignments", compIDs(b), "B A C B C")
	wantString(t, "loads", loads(t, s, "p1"), "A=1 B=2 C=2")
	tab, err := s.Table(ctx, "p1")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	wantString(t, "table without the full Scale", formatTable(tab), "[B C] [0 2147483647]")

	// Several Scales fill up within one batch.
	newPool(t, s, "p2", "A=0 B=1 C=2 D=9")
	putScale(t, s, "p2", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(2))}, t0)
	putScale(t, s, "p2", "B", dispatch.ScaleSpec{MaxOrders: ptr(int64(3))}, t0)
	scales := allScales(t, s, "p2")
	want, _ := waterfillWithMax(scales, 12)
	b = mustDispatch(t, s, request("p2", "b1", t0, ids("o", 12)...))
	wantString(t, "assignments", compIDs(b), want)
	wantString(t, "loads", loads(t, s, "p2"), "A=2 B=3 C=9 D=10")
}

// waterfillWithMax is the reference for dispatching m orders over scales
// with maxOrders: balancing.Waterfill until a Scale fills up, then again
// over the remaining eligible Scales. It reports false if the Scales run
// out of room.
func waterfillWithMax(scales []dispatch.Scale, m int) (string, bool) {
	count := make(map[string]int64)
	for _, sc := range scales {
		count[sc.CompID] = sc.OrderCount()
	}
	var out []string
	for len(out) < m {
		var loads []balancing.Load
		maxOf := make(map[string]int64)
		for _, sc := range scales {
			if c := count[sc.CompID]; sc.State == dispatch.Active && (sc.MaxOrders == 0 || c < sc.MaxOrders) {
				loads = append(loads, balancing.Load{ID: sc.CompID, Count: c})
				maxOf[sc.CompID] = sc.MaxOrders
			}
		}
		if len(loads) == 0 {
			return strings.Join(out, " "), false
		}
		r := balancing.SortLoads(loads)
		balancing.Waterfill(r, m-len(out), func(rank int) bool {
			id := r[rank].ID
			count[id]++
			out = append(out, id)
			return maxOf[id] == 0 || count[id] < maxOf[id]
		})
	}
	return strings.Join(out, " "), true
}

// testMaxOrdersDifferential dispatches random batches into pools whose
// Scales have random maxOrders: each batch must match waterfillWithMax, and
// a batch it has no room for must fail with ErrNoEligibleScale and change
// nothing.
func testMaxOrdersDifferential(t *testing.T, s dispatch.Store) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		pool := fmt.Sprint("p", seed)
		newPool(t, s, pool, "")
		for i := range 2 + rng.IntN(12) {
			count := int64(rng.IntN(10))
			spec := dispatch.ScaleSpec{OrderCount: &count}
			if rng.IntN(4) > 0 {
				spec.MaxOrders = ptr(count + 1 + int64(rng.IntN(15)))
			}
			putScale(t, s, pool, fmt.Sprintf("c%02d", i), spec, t0)
		}
		var assigned []string
		for step := range 25 {
			now := at(time.Duration(step) * time.Second)
			if rng.IntN(4) == 0 && len(assigned) > 0 {
				k := 1 + rng.IntN(min(len(assigned), 8))
				cs := make([]dispatch.Completion, k)
				for i, id := range assigned[:k] {
					cs[i] = dispatch.Completion{OrderID: id}
				}
				if _, _, err := s.Complete(ctx, pool, cs, now); err != nil {
					t.Fatalf("Complete: %v", err)
				}
				assigned = assigned[k:]
				continue
			}
			m := 1 + rng.IntN(20)
			want, ok := waterfillWithMax(allScales(t, s, pool), m)
			req := request(pool, fmt.Sprint("b", step), now, ids(fmt.Sprintf("s%d-", step), m)...)
			if !ok {
				before := Snapshot(t, s, pool)
				_, _, err := s.Dispatch(ctx, req)
				wantErr(t, fmt.Sprintf("seed %d step %d", seed, step), err, dispatch.ErrNoEligibleScale)
				CheckUnchanged(t, s, before)
				continue
			}
			b := mustDispatch(t, s, req)
			wantString(t, fmt.Sprintf("seed %d step %d", seed, step), compIDs(b), want)
			for _, a := range b.Assignments {
				assigned = append(assigned, a.OrderID)
			}
		}
	}
}

func testIneligibleScales(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=10 B=0 C=0 D=5")
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "p1", "C", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	putScale(t, s, "p1", "D", dispatch.ScaleSpec{MaxOrders: ptr(int64(5))}, t0)
	tab, err := s.Table(ctx, "p1")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	wantString(t, "table", formatTable(tab), "[A] [2147483647]")
	b := mustDispatch(t, s, request("p1", "b1", t0, ids("o", 4)...))
	wantString(t, "assignments", compIDs(b), "A A A A")

	putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Active)}, t0)
	putScale(t, s, "p1", "D", dispatch.ScaleSpec{MaxOrders: ptr(int64(7))}, t0)
	want := strings.Join(balancing.WaterfillIDs(eligibleLoads(t, s, "p1"), 6), " ")
	b = mustDispatch(t, s, request("p1", "b2", t0, ids("q", 6)...))
	wantString(t, "assignments once B is active and D has room", compIDs(b), want)
	if strings.Contains(compIDs(b), "C") {
		t.Errorf("assignments: got %s, want none on the down Scale C", compIDs(b))
	}
}
