package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// The ActiveSince values of the scale tests, as formatScale shows them.
const (
	sinceT0 = "activeSince=2025-03-01T12:00:00Z"
	sinceT4 = "activeSince=2025-03-01T12:04:00Z"
	sinceT6 = "activeSince=2025-03-01T12:06:00Z"
)

func testRegisterScale(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "")
	register := func(compID string, spec dispatch.ScaleSpec, want string) {
		t.Helper()
		sc, created, err := s.PutScale(ctx, "p1", compID, spec, t0)
		if err != nil {
			t.Fatalf("PutScale %s: %v", compID, err)
		}
		if !created {
			t.Errorf("PutScale %s: got created false, want true", compID)
		}
		wantString(t, "PutScale "+compID, formatScale(sc), want)
		wantString(t, "GetScale "+compID, formatScale(getScale(t, s, "p1", compID)), want)
	}
	register("A", dispatch.ScaleSpec{},
		"A weight=1 state=active max=0 count=0 outstanding=0 base=0 "+sinceT0)
	register("B", dispatch.ScaleSpec{OrderCount: ptr(int64(7))},
		"B weight=1 state=active max=0 count=7 outstanding=0 base=7 "+sinceT0)
	register("C", dispatch.ScaleSpec{Weight: ptr(int64(5)), State: ptr(dispatch.Draining), MaxOrders: ptr(int64(10)), OrderCount: ptr(int64(3))},
		"C weight=5 state=draining max=10 count=3 outstanding=0 base=3 activeSince=-")
	register("D", dispatch.ScaleSpec{State: ptr(dispatch.Down)},
		"D weight=1 state=down max=0 count=0 outstanding=0 base=0 activeSince=-")
	_, err := s.GetScale(ctx, "p1", "E")
	wantErr(t, "GetScale of an unknown Scale", err, dispatch.ErrScaleNotFound, "E")
	if p, _ := s.GetPool(ctx, "p1"); p.ScaleCount != 4 {
		t.Errorf("scaleCount: got %d, want 4", p.ScaleCount)
	}
}

func testUpdateScale(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "")
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{Weight: ptr(int64(3)), MaxOrders: ptr(int64(9)), OrderCount: ptr(int64(2))}, t0)
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2", "o3"))
	update := func(spec dispatch.ScaleSpec, now time.Time, want string) {
		t.Helper()
		sc, created, err := s.PutScale(ctx, "p1", "A", spec, now)
		if err != nil {
			t.Fatalf("PutScale: %v", err)
		}
		if created {
			t.Errorf("PutScale: got created true, want false")
		}
		wantString(t, "PutScale", formatScale(sc), want)
		wantString(t, "GetScale", formatScale(getScale(t, s, "p1", "A")), want)
	}
	minute := func(n int) time.Time { return at(time.Duration(n) * time.Minute) }
	update(dispatch.ScaleSpec{}, minute(1),
		"A weight=3 state=active max=9 count=5 outstanding=3 base=2 "+sinceT0)
	update(dispatch.ScaleSpec{OrderCount: ptr(int64(10))}, minute(1),
		"A weight=3 state=active max=9 count=10 outstanding=3 base=7 "+sinceT0)
	update(dispatch.ScaleSpec{OrderCount: ptr(int64(1))}, minute(1),
		"A weight=3 state=active max=9 count=3 outstanding=3 base=0 "+sinceT0)
	update(dispatch.ScaleSpec{Weight: ptr(int64(4)), MaxOrders: ptr(int64(0))}, minute(1),
		"A weight=4 state=active max=0 count=3 outstanding=3 base=0 "+sinceT0)
	update(dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, minute(2),
		"A weight=4 state=draining max=0 count=3 outstanding=3 base=0 "+sinceT0)
	update(dispatch.ScaleSpec{State: ptr(dispatch.Down)}, minute(3),
		"A weight=4 state=down max=0 count=3 outstanding=3 base=0 "+sinceT0)
	update(dispatch.ScaleSpec{State: ptr(dispatch.Active)}, minute(4),
		"A weight=4 state=active max=0 count=3 outstanding=3 base=0 "+sinceT4)
	update(dispatch.ScaleSpec{State: ptr(dispatch.Active)}, minute(5),
		"A weight=4 state=active max=0 count=3 outstanding=3 base=0 "+sinceT4)

	putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	sc := putScale(t, s, "p1", "B", dispatch.ScaleSpec{State: ptr(dispatch.Active)}, minute(6))
	wantString(t, "a draining Scale made active", formatScale(sc),
		"B weight=1 state=active max=0 count=0 outstanding=0 base=0 "+sinceT6)
}

func testListScales(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=3 B=1 C=3 D=0 E=2 F=1")
	putScale(t, s, "p1", "G", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "p1", "H", dispatch.ScaleSpec{MaxOrders: ptr(int64(1)), OrderCount: ptr(int64(1))}, t0)
	const all = "D=0 G=0 B=1 F=1 H=1 E=2 A=3 C=3"
	wantString(t, "ListScales", formatScales(allScales(t, s, "p1")), all)

	for _, limit := range []int{1, 2, 3, 4, 7, 8, 9} {
		var got []string
		cursor, pages := "", 0
		for {
			page, next, err := s.ListScales(ctx, "p1", dispatch.Page{Cursor: cursor, Limit: limit})
			if err != nil {
				t.Fatalf("ListScales(limit %d): %v", limit, err)
			}
			if len(page) > limit || (next != "" && len(page) != limit) {
				t.Errorf("ListScales(limit %d): got %d Scales and next %q", limit, len(page), next)
			}
			got = append(got, formatScales(page))
			if pages++; next == "" || pages > 8 {
				break
			}
			cursor = next
		}
		wantString(t, fmt.Sprintf("pages of %d", limit), strings.Join(got, " "), all)
		if wantPages := (8 + limit - 1) / limit; pages != wantPages {
			t.Errorf("ListScales(limit %d): got %d pages, want %d", limit, pages, wantPages)
		}
	}

	// A dispatch moves the Scales it loads.
	mustDispatch(t, s, request("p1", "b1", t0, ids("o", 3)...))
	wantString(t, "ListScales after a batch", formatScales(allScales(t, s, "p1")), "G=0 B=1 H=1 D=2 E=2 F=2 A=3 C=3")

	for _, bad := range []string{"not a cursor!", "%%%", "D"} {
		_, _, err := s.ListScales(ctx, "p1", dispatch.Page{Cursor: bad, Limit: 10})
		wantErr(t, "ListScales with cursor "+bad, err, dispatch.ErrInvalidRequest)
	}
}

func testDeleteScale(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=5")
	err := s.DeleteScale(ctx, "p1", "Z", false, t0)
	wantErr(t, "DeleteScale of an unknown Scale", err, dispatch.ErrScaleNotFound, "Z")

	// B has no outstanding orders (its load is baseLoad): it goes.
	if err := s.DeleteScale(ctx, "p1", "B", false, t0); err != nil {
		t.Fatalf("DeleteScale B: %v", err)
	}
	_, err = s.GetScale(ctx, "p1", "B")
	wantErr(t, "GetScale after delete", err, dispatch.ErrScaleNotFound)

	// A holds two orders: busy until they are finished.
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2"))
	before := Snapshot(t, s, "p1")
	err = s.DeleteScale(ctx, "p1", "A", false, at(time.Minute))
	wantErr(t, "DeleteScale of a busy Scale", err, dispatch.ErrScaleBusy, "A")
	CheckUnchanged(t, s, before)
	if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "o1"}}, at(time.Minute)); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := s.Cancel(ctx, "p1", "o2", at(time.Minute)); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := s.DeleteScale(ctx, "p1", "A", false, at(2*time.Minute)); err != nil {
		t.Fatalf("DeleteScale of a Scale whose orders are finished: %v", err)
	}
	wantString(t, "pool after deleting both", Snapshot(t, s, "p1").String(),
		"pool p1 strategy=waterfill slowStart=0s scales=0 created=2025-03-01T12:00:00Z heartbeat=0s onLapse=hold maxFails=0 failWindow=10s eject=30s leasesSince=-\n  table [] []")
	// Finished orders outlive their Scale.
	wantOrder(t, s, "p1", "o1", dispatch.Completed, at(time.Minute))
	wantOrder(t, s, "p1", "o2", dispatch.Cancelled, at(time.Minute))

	// Registered again, the Scale starts afresh.
	sc := putScale(t, s, "p1", "A", dispatch.ScaleSpec{}, at(3*time.Minute))
	wantString(t, "A registered again", formatScale(sc),
		"A weight=1 state=active max=0 count=0 outstanding=0 base=0 activeSince=2025-03-01T12:03:00Z")
}

func testForceDeleteScale(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	putScale(t, s, "p1", "C", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	b := mustDispatch(t, s, request("p1", "b1", t0, ids("o", 6)...))
	wantString(t, "batch", compIDs(b), "B A B A B A")
	if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "o2"}}, at(time.Minute)); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := s.DeleteScale(ctx, "p1", "A", true, at(2*time.Minute)); err != nil {
		t.Fatalf("DeleteScale with force: %v", err)
	}
	wantOrder(t, s, "p1", "o2", dispatch.Completed, at(time.Minute))
	wantOrder(t, s, "p1", "o4", dispatch.Cancelled, at(2*time.Minute))
	wantOrder(t, s, "p1", "o6", dispatch.Cancelled, at(2*time.Minute))
	for _, id := range []string{"o1", "o3", "o5"} {
		wantOrder(t, s, "p1", id, dispatch.Assigned, time.Time{})
	}
	wantString(t, "loads", loads(t, s, "p1"), "B=3 C=0")
	// Force on an idle Scale is a plain delete.
	if err := s.DeleteScale(ctx, "p1", "C", true, at(3*time.Minute)); err != nil {
		t.Fatalf("DeleteScale C with force: %v", err)
	}
	wantString(t, "loads", loads(t, s, "p1"), "B=3")
}

// testPoolFull runs with at most 3 Scales per pool: a fourth is refused
// with ErrPoolFull and changes nothing, updating one of the three is not
// refused, and after a deletion a new one fits again.
func testPoolFull(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0 C=0")
	before := Snapshot(t, s, "p1")
	_, _, err := s.PutScale(ctx, "p1", "D", dispatch.ScaleSpec{}, at(time.Second))
	wantErr(t, "a fourth Scale", err, dispatch.ErrPoolFull, "p1", "3")
	CheckUnchanged(t, s, before)
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{Weight: ptr[int64](5)}, at(2*time.Second))
	if err := s.DeleteScale(ctx, "p1", "B", false, at(3*time.Second)); err != nil {
		t.Fatalf("DeleteScale: %v", err)
	}
	putScale(t, s, "p1", "D", dispatch.ScaleSpec{}, at(4*time.Second))
	wantString(t, "Scales", loads(t, s, "p1"), "A=0 C=0 D=0")
}
