package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

func complete(s dispatch.Store, pool string, now time.Time, orderIDs ...string) ([]dispatch.Order, int, error) {
	cs := make([]dispatch.Completion, len(orderIDs))
	for i, id := range orderIDs {
		cs[i] = dispatch.Completion{OrderID: id, DurationMs: int64(10 * i)}
	}
	return s.Complete(ctx, pool, cs, now)
}

func testComplete(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=3")
	mustDispatch(t, s, request("p1", "b1", t0, ids("o", 4)...))
	wantCompleted := func(now time.Time, orderIDs []string, wantN int, want ...string) {
		t.Helper()
		orders, n, err := complete(s, "p1", now, orderIDs...)
		if err != nil {
			t.Fatalf("Complete %v: %v", orderIDs, err)
		}
		if n != wantN {
			t.Errorf("Complete %v: got %d newly completed, want %d", orderIDs, n, wantN)
		}
		if len(orders) != len(want) {
			t.Fatalf("Complete %v: got %d orders, want %d", orderIDs, len(orders), len(want))
		}
		for i, o := range orders {
			wantString(t, "completed order", formatOrder(o), want[i])
		}
	}
	line := func(id string, completed time.Time) string {
		return formatOrder(dispatch.Order{ID: id, CompID: "A", BatchID: "b1", State: dispatch.Completed,
			AssignedAt: t0, CompletedAt: completed})
	}
	wantCompleted(at(time.Minute), []string{"o2", "o1"}, 2, line("o2", at(time.Minute)), line("o1", at(time.Minute)))
	wantString(t, "A", formatScales([]dispatch.Scale{getScale(t, s, "p1", "A")}), "A=5")
	wantString(t, "A's outstanding", fmt.Sprint(getScale(t, s, "p1", "A").Outstanding), "2")

	// Completing again changes nothing, and counts only what is new.
	wantCompleted(at(2*time.Minute), []string{"o1", "o3"}, 1, line("o1", at(time.Minute)), line("o3", at(2*time.Minute)))
	wantCompleted(at(3*time.Minute), []string{"o3"}, 0, line("o3", at(2*time.Minute)))
	wantString(t, "loads", loads(t, s, "p1"), "A=4")
	wantOrder(t, s, "p1", "o4", dispatch.Assigned, time.Time{})
}

func testCompleteAllOrNone(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	mustDispatch(t, s, request("p1", "b1", t0, ids("o", 4)...))
	if _, err := s.Cancel(ctx, "p1", "o4", t0); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	before := Snapshot(t, s, "p1")
	_, _, err := complete(s, "p1", at(time.Minute), "o1", "o2", "o4")
	wantErr(t, "Complete with a cancelled order", err, dispatch.ErrOrderState, "o4")
	_, _, err = complete(s, "p1", at(time.Minute), "o1", "nope", "o2")
	wantErr(t, "Complete with an unknown order", err, dispatch.ErrOrderNotFound, "nope")
	CheckUnchanged(t, s, before)
	for _, id := range []string{"o1", "o2", "o3"} {
		wantOrder(t, s, "p1", id, dispatch.Assigned, time.Time{})
	}
	wantOrder(t, s, "p1", "o4", dispatch.Cancelled, t0)
}

func testCancel(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{}, t0)
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2", "o3"))
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)

	// A draining Scale's orders can still be cancelled and completed.
	for _, now := range []time.Time{at(time.Minute), at(2 * time.Minute)} {
		o, err := s.Cancel(ctx, "p1", "o1", now)
		if err != nil {
			t.Fatalf("Cancel o1: %v", err)
		}
		wantString(t, "cancelled order", formatOrder(o), formatOrder(dispatch.Order{ID: "o1", CompID: "B",
			BatchID: "b1", State: dispatch.Cancelled, AssignedAt: t0, CompletedAt: at(time.Minute)}))
		wantString(t, "loads", loads(t, s, "p1"), "A=0 B=2")
	}
	if _, _, err := complete(s, "p1", at(time.Minute), "o2"); err != nil {
		t.Fatalf("Complete o2: %v", err)
	}
	before := Snapshot(t, s, "p1")
	_, err := s.Cancel(ctx, "p1", "o2", at(3*time.Minute))
	wantErr(t, "Cancel of a completed order", err, dispatch.ErrOrderState, "o2")
	_, err = s.Cancel(ctx, "p1", "nope", at(3*time.Minute))
	wantErr(t, "Cancel of an unknown order", err, dispatch.ErrOrderNotFound, "nope")
	CheckUnchanged(t, s, before)
	wantOrder(t, s, "p1", "o2", dispatch.Completed, at(time.Minute))
	wantOrder(t, s, "p1", "o3", dispatch.Assigned, time.Time{})
}

func testCompleteFreesRoom(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(2))}, t0)
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2"))
	_, _, err := s.Dispatch(ctx, request("p1", "b2", t0, "o3"))
	wantErr(t, "Dispatch into a full pool", err, dispatch.ErrNoEligibleScale)
	if _, _, err := complete(s, "p1", at(time.Minute), "o1"); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	tab, err := s.Table(ctx, "p1")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	wantString(t, "table once A has room", formatTable(tab), "[A] [2147483647]")
	b := mustDispatch(t, s, request("p1", "b3", at(time.Minute), "o3"))
	wantString(t, "assignments", compIDs(b), "A")
	if _, err := s.Cancel(ctx, "p1", "o2", at(2*time.Minute)); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	b = mustDispatch(t, s, request("p1", "b4", at(2*time.Minute), "o4"))
	wantString(t, "assignments", compIDs(b), "A")
}
