package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// reassignRand returns n pairs of random numbers, fixed by seed.
func reassignRand(seed uint64, n int) []uint64 {
	out := make([]uint64, 2*n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = x % max53
	}
	return out
}

// scaleOrders lists every outstanding order of a Scale, limit per page.
func scaleOrders(t testing.TB, s dispatch.Store, pool, compID string, limit int) []dispatch.Order {
	t.Helper()
	var out []dispatch.Order
	cursor := ""
	for range 10000 {
		page, next, err := s.ListScaleOrders(ctx, pool, compID, dispatch.Page{Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("ListScaleOrders %s/%s: %v", pool, compID, err)
		}
		if len(page) > limit {
			t.Fatalf("ListScaleOrders %s/%s: got %d orders, limit %d", pool, compID, len(page), limit)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		if len(page) == 0 {
			t.Fatalf("ListScaleOrders %s/%s: an empty page with a next cursor", pool, compID)
		}
		cursor = next
	}
	t.Fatalf("ListScaleOrders %s/%s: no last page", pool, compID)
	return nil
}

func orderIDs(os []dispatch.Order) string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return strings.Join(out, " ")
}

// checkScaleOrders checks that every Scale of the pool lists exactly its
// outstanding orders, all assigned to it: counts equal records.
func checkScaleOrders(t testing.TB, s dispatch.Store, pool string) {
	t.Helper()
	for _, sc := range allScales(t, s, pool) {
		os := scaleOrders(t, s, pool, sc.CompID, 3)
		if int64(len(os)) != sc.Outstanding {
			t.Errorf("scale %s: lists %d orders, outstanding %d", sc.CompID, len(os), sc.Outstanding)
		}
		seen := make(map[string]bool)
		for _, o := range os {
			if seen[o.ID] {
				t.Errorf("scale %s: order %s listed twice", sc.CompID, o.ID)
			}
			seen[o.ID] = true
			if o.State != dispatch.Assigned || o.CompID != sc.CompID {
				t.Errorf("scale %s: lists order %s %s on %s", sc.CompID, o.ID, o.State, o.CompID)
			}
			if g := getOrder(t, s, pool, o.ID); g != o {
				t.Errorf("scale %s: lists %+v, GetOrder has %+v", sc.CompID, o, g)
			}
		}
	}
}

// testReassign checks, for several strategies, that reassigning a down
// Scale's orders assigns them as a batch of as many orders would be, in
// order of assignment, and advances the strategy's state as that batch
// would: twin pools, one reassigns, the other dispatches such a batch.
func testReassign(t *testing.T, s dispatch.Store) {
	for k, st := range []dispatch.Strategy{dispatch.Waterfill, dispatch.RoundRobin, dispatch.Random, dispatch.SmoothWeightedRoundRobin} {
		p1, p2 := fmt.Sprintf("r%d", k), fmt.Sprintf("t%d", k)
		for _, p := range []string{p1, p2} {
			strategyPool(t, s, p, st, "A=0 B=1/2 C=3/3 D=2")
			orders := []dispatch.OrderInput{{ID: "o1", Key: "k1"}, {ID: "o2"}, {ID: "o3", Key: "k|3"}, {ID: "o4"}, {ID: "o5"}, {ID: "o6"}}
			mustDispatch(t, s, ordersRequest(p, "b1", t0, reassignRand(1, 6), orders))
			mustDispatch(t, s, randRequest(p, "b2", at(1e9), reassignRand(2, 5), ids("q", 5)...))
			mustDispatch(t, s, randRequest(p, "b3", at(3e9), reassignRand(3, 4), ids("w", 4)...))
			putScale(t, s, p, "A", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, at(4e9))
		}
		// The orders of A as assigned, oldest first.
		var want []string
		for _, b := range []string{"b1", "b2", "b3"} {
			batch, err := s.GetBatch(ctx, p1, b, t0)
			if err != nil {
				t.Fatalf("%s: GetBatch %s: %v", st, b, err)
			}
			for _, a := range batch.Assignments {
				if a.CompID == "A" {
					want = append(want, a.OrderID)
				}
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: scale A got no orders; the test needs some", st)
		}
		before := scaleOrders(t, s, p1, "A", 2)
		wantString(t, string(st)+": A's orders", orderIDs(before), strings.Join(want, " "))
		checkScaleOrders(t, s, p1)

		rnd := reassignRand(4, len(want))
		moves, err := s.Reassign(ctx, dispatch.ReassignRequest{Pool: p1, CompID: "A", Now: at(5e9), Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
		if err != nil {
			t.Fatalf("%s: Reassign: %v", st, err)
		}
		twin := mustDispatch(t, s, randRequest(p2, "b4", at(5e9), rnd, ids("m", len(want))...))
		if len(moves) != len(want) {
			t.Fatalf("%s: Reassign moved %d orders, want %d", st, len(moves), len(want))
		}
		got := make([]string, len(moves))
		for i, m := range moves {
			if m.OrderID != want[i] {
				t.Errorf("%s: move %d is order %s, want %s", st, i, m.OrderID, want[i])
			}
			got[i] = m.CompID
			o := getOrder(t, s, p1, m.OrderID)
			b := before[i]
			if o.CompID != m.CompID || o.State != dispatch.Assigned || o.BatchID != b.BatchID || o.Key != b.Key || !o.AssignedAt.Equal(b.AssignedAt) {
				t.Errorf("%s: order %s after Reassign: %+v, before %+v", st, m.OrderID, o, b)
			}
		}
		wantString(t, string(st)+": Reassign Scales", strings.Join(got, " "), compIDs(twin))
		if sc := getScale(t, s, p1, "A"); sc.Outstanding != 0 || sc.State != dispatch.Down {
			t.Errorf("%s: A after Reassign: %s", st, formatScale(sc))
		}
		if os := scaleOrders(t, s, p1, "A", 2); len(os) != 0 {
			t.Errorf("%s: A still lists %s", st, orderIDs(os))
		}
		l1 := strings.Fields(loads(t, s, p1))[1:]
		l2 := strings.Fields(loads(t, s, p2))[1:]
		wantString(t, string(st)+": loads after Reassign", strings.Join(l1, " "), strings.Join(l2, " "))
		checkScaleOrders(t, s, p1)
		// The strategy's state advanced as for the twin's batch.
		next := reassignRand(5, 7)
		d1 := mustDryRun(t, s, randRequest(p1, "", at(6e9), next, ids("n", 7)...))
		d2 := mustDryRun(t, s, randRequest(p2, "", at(6e9), next, ids("n", 7)...))
		wantString(t, string(st)+": next batch", compIDs(d1), compIDs(d2))
		// A retry finds nothing left to move.
		again, err := s.Reassign(ctx, dispatch.ReassignRequest{Pool: p1, CompID: "A", Now: at(7e9), Rand: rnd, MaxCost: dispatch.DefaultMaxCost})
		if err != nil || len(again) != 0 {
			t.Errorf("%s: Reassign again: got %v, %v; want nothing moved", st, again, err)
		}
		// Moved orders complete on their new Scale.
		if _, _, err := s.Complete(ctx, p1, []dispatch.Completion{{OrderID: moves[0].OrderID}}, at(8e9)); err != nil {
			t.Fatalf("%s: Complete %s: %v", st, moves[0].OrderID, err)
		}
		checkScaleOrders(t, s, p1)
	}
}

// testReassignErrors checks the refusals of Reassign, each leaving the
// pool as it was.
func testReassignErrors(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{MaxOrders: ptr(int64(2))}, t0)
	mustDispatch(t, s, request("p1", "b1", t0, ids("o", 4)...))
	req := dispatch.ReassignRequest{Pool: "p1", CompID: "A", Now: at(1e9), Rand: make([]uint64, 4), MaxCost: dispatch.DefaultMaxCost}

	before := Snapshot(t, s, "p1")
	_, err := s.Reassign(ctx, req)
	wantErr(t, "Reassign of an active Scale", err, dispatch.ErrScaleState, "A")
	CheckUnchanged(t, s, before)
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	before = Snapshot(t, s, "p1")
	_, err = s.Reassign(ctx, req)
	wantErr(t, "Reassign of a draining Scale", err, dispatch.ErrScaleState, "A")
	CheckUnchanged(t, s, before)

	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	if getScale(t, s, "p1", "A").Outstanding != 2 || getScale(t, s, "p1", "B").Outstanding != 2 {
		t.Fatalf("setup: loads %s", loads(t, s, "p1"))
	}
	aOrders := orderIDs(scaleOrders(t, s, "p1", "A", 10))
	before = Snapshot(t, s, "p1")
	_, err = s.Reassign(ctx, req)
	wantErr(t, "Reassign with no eligible Scale", err, dispatch.ErrNoEligibleScale)
	CheckUnchanged(t, s, before)
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{MaxOrders: ptr(int64(3))}, t0)
	before = Snapshot(t, s, "p1")
	_, err = s.Reassign(ctx, req)
	wantErr(t, "Reassign without room for all", err, dispatch.ErrNoEligibleScale)
	CheckUnchanged(t, s, before)
	wantString(t, "A's orders after the refusals", orderIDs(scaleOrders(t, s, "p1", "A", 10)), aOrders)

	_, err = s.Reassign(ctx, dispatch.ReassignRequest{Pool: "p1", CompID: "Z", Now: at(1e9)})
	wantErr(t, "Reassign of an unknown Scale", err, dispatch.ErrScaleNotFound, "Z")
	_, err = s.Reassign(ctx, dispatch.ReassignRequest{Pool: "nope", CompID: "A", Now: at(1e9)})
	wantErr(t, "Reassign in an unknown pool", err, dispatch.ErrPoolNotFound)

	putScale(t, s, "p1", "B", dispatch.ScaleSpec{MaxOrders: ptr(int64(4))}, t0)
	moves, err := s.Reassign(ctx, req)
	if err != nil {
		t.Fatalf("Reassign with room: %v", err)
	}
	if len(moves) != 2 || moves[0].CompID != "B" || moves[1].CompID != "B" {
		t.Errorf("Reassign with room: got %v, want both orders on B", moves)
	}
	wantString(t, "loads", loads(t, s, "p1"), "A=0 B=4")
	if sc := getScale(t, s, "p1", "B"); sc.Eligible() {
		t.Errorf("B is full but eligible: %s", formatScale(sc))
	}
	checkScaleOrders(t, s, "p1")

	// A down Scale without orders moves nothing.
	putScale(t, s, "p1", "C", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	moves, err = s.Reassign(ctx, dispatch.ReassignRequest{Pool: "p1", CompID: "C", Now: at(2e9)})
	if err != nil || len(moves) != 0 {
		t.Errorf("Reassign of an empty Scale: got %v, %v", moves, err)
	}
}

// testListScaleOrders pages through a Scale's outstanding orders, oldest
// first, across the chunks a store may keep them in.
func testListScaleOrders(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	var want []string
	for b := range 3 {
		os := ids(fmt.Sprintf("b%d-", b), 70)
		mustDispatch(t, s, request("p1", fmt.Sprintf("b%d", b), at(time.Duration(b)*time.Second), os...))
		want = append(want, os...)
	}
	// Finished orders leave the list.
	if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "b0-1"}, {OrderID: "b1-64"}, {OrderID: "b2-70"}}, at(5e9)); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := s.Cancel(ctx, "p1", "b1-2", at(5e9)); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	var live []string
	for _, id := range want {
		if id != "b0-1" && id != "b1-64" && id != "b2-70" && id != "b1-2" {
			live = append(live, id)
		}
	}
	for _, limit := range []int{1, 7, 64, 65, 206, 1000} {
		wantString(t, fmt.Sprintf("A's orders, pages of %d", limit), orderIDs(scaleOrders(t, s, "p1", "A", limit)), strings.Join(live, " "))
	}
	page, next, err := s.ListScaleOrders(ctx, "p1", "A", dispatch.Page{Limit: 206})
	if err != nil || len(page) != 206 || next != "" {
		t.Errorf("one full page: got %d orders, next %q, %v", len(page), next, err)
	}
	checkScaleOrders(t, s, "p1")

	newPool(t, s, "p2", "E=4")
	page, next, err = s.ListScaleOrders(ctx, "p2", "E", dispatch.Page{Limit: 10})
	if err != nil || len(page) != 0 || next != "" {
		t.Errorf("a Scale without orders: got %v, %q, %v", page, next, err)
	}
	_, _, err = s.ListScaleOrders(ctx, "p1", "A", dispatch.Page{Cursor: "not-a-cursor", Limit: 10})
	wantErr(t, "a cursor the store did not make", err, dispatch.ErrInvalidRequest)
	_, _, err = s.ListScaleOrders(ctx, "p1", "Z", dispatch.Page{Limit: 10})
	wantErr(t, "an unknown Scale", err, dispatch.ErrScaleNotFound, "Z")
	_, _, err = s.ListScaleOrders(ctx, "nope", "A", dispatch.Page{Limit: 10})
	wantErr(t, "an unknown pool", err, dispatch.ErrPoolNotFound)
}
