package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Scale health (DESIGN §8): failure reports and ejection.

// ejection is a pool spec that ejects after maxFails reports within window
// for eject × consecutive ejections.
func ejection(maxFails int64, window, eject time.Duration) dispatch.PoolSpec {
	return dispatch.PoolSpec{MaxFails: &maxFails, FailWindow: &window, EjectTime: &eject}
}

func fail(t testing.TB, s dispatch.Store, pool, orderID, compID string, now time.Time) dispatch.FailResult {
	t.Helper()
	r, err := s.Fail(ctx, failRequest(pool, orderID, compID, now))
	if err != nil {
		t.Fatalf("Fail %s on %s: %v", orderID, compID, err)
	}
	return r
}

func failRequest(pool, orderID, compID string, now time.Time) dispatch.FailRequest {
	return dispatch.FailRequest{Pool: pool, OrderID: orderID, CompID: compID, Now: now, Rand: []uint64{0, 0}, MaxCost: dispatch.DefaultMaxCost}
}

// The reference scenario: maxFails 3, three reports eject the Scale; a
// fourth report of an order that already moved changes nothing.
func testFailEject(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", ejection(3, 10*time.Second, 30*time.Second), "A=0 B=5 C=5")
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2", "o3", "o4"))
	counted := int64(0) // reports Fail answered as counted
	for i, id := range []string{"o1", "o2", "o3"} {
		now := at(time.Duration(i+1) * time.Second)
		r := fail(t, s, "p1", id, "A", now)
		counted += b2i(r.Counted)
		if !r.Moved || !r.Counted || r.Order.CompID == "A" || r.Order.Moves != 1 {
			t.Errorf("report %d: got moved=%v counted=%v order on %s moves %d, want moved and counted, off A, 1 move",
				i+1, r.Moved, r.Counted, r.Order.CompID, r.Order.Moves)
		}
		if r.Ejected != (i == 2) {
			t.Errorf("report %d: got ejected=%v, want %v", i+1, r.Ejected, i == 2)
		}
	}
	sc := getScale(t, s, "p1", "A")
	if sc.Health != dispatch.Ejected || !sc.EjectedUntil.Equal(at(33*time.Second)) || sc.Ejections != 1 || sc.Failures != 0 {
		t.Errorf("after 3 reports: got %s, want ejected until 33s, 1 ejection, window closed", formatHealth(sc))
	}
	before := Snapshot(t, s, "p1")
	r := fail(t, s, "p1", "o3", "A", at(4*time.Second))
	counted += b2i(r.Counted)
	if r.Moved || r.Counted || r.Order.CompID == "A" {
		t.Errorf("repeated report: got moved=%v counted=%v on %s, want nothing", r.Moved, r.Counted, r.Order.CompID)
	}
	CheckUnchanged(t, s, before)
	b := mustDispatch(t, s, request("p1", "b2", at(5*time.Second), "o5"))
	if compIDs(b) == "A" {
		t.Errorf("dispatch while A is ejected: got A")
	}
	// A report against the ejected Scale moves the order, counts nothing.
	r = fail(t, s, "p1", "o4", "A", at(6*time.Second))
	counted += b2i(r.Counted)
	if !r.Moved || r.Counted {
		t.Errorf("report against an ejected Scale: got moved=%v counted=%v, want moved, not counted", r.Moved, r.Counted)
	}
	// The ejection ends at 33s by itself; A warms up from then.
	b = mustDispatch(t, s, request("p1", "b3", at(33*time.Second), "o6"))
	wantString(t, "dispatch as the ejection ends", compIDs(b), "A")
	if sc := getScale(t, s, "p1", "A"); !sc.ActiveSince.Equal(at(33*time.Second)) || sc.Health != dispatch.Up {
		t.Errorf("after the ejection: got %s activeSince %s, want up, active since 33s", formatHealth(sc), formatTime(sc.ActiveSince))
	}
	changes, _ := drain(t, s, "p1", at(40*time.Second), 10)
	wantString(t, "journal", formatChanges(changes), "A up>ejected@3s A ejected>up@33s")
	// The watch's counters: o1-o4 moved by reports, the first three counted.
	if c := checkCounters(t, s, "p1", ids("o", 6), counted); c.Moved != 4 || c.Failed != 3 || c.Dispatched != 6 {
		t.Errorf("recorded: %d moves, %d reports counted, %d orders; want 4, 3 and 6", c.Moved, c.Failed, c.Dispatched)
	}
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Consecutive ejections lengthen the ejection up to 10 × ejectTime; a
// quiet failure window resets them; reports spread wider than the window
// never eject.
func testEjectionArithmetic(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", ejection(2, 10*time.Second, time.Second), "A=0 B=1000000")
	now := t0
	n := 0
	// eject reports two orders of A at now and now+1ms.
	eject := func() dispatch.Scale {
		t.Helper()
		for i := range 2 {
			n++
			id := "o" + strconv.Itoa(n)
			b := mustDispatch(t, s, request("p1", "b"+id, now, id))
			if compIDs(b) != "A" {
				t.Fatalf("order %s went to %s, want A", id, compIDs(b))
			}
			fail(t, s, "p1", id, "A", now.Add(time.Duration(i)*time.Millisecond))
		}
		return getScale(t, s, "p1", "A")
	}
	for k := 1; k <= 12; k++ {
		sc := eject()
		factor := min(k, dispatch.MaxEjectionFactor)
		want := now.Add(time.Millisecond + time.Duration(factor)*time.Second)
		if sc.Ejections != int64(k) || !sc.EjectedUntil.Equal(want) {
			t.Fatalf("ejection %d: got %d ejections until %s, want %d until %s", k, sc.Ejections, formatTime(sc.EjectedUntil), k, formatTime(want))
		}
		// The next reports come as the ejection ends: not quiet.
		now = sc.EjectedUntil
	}
	// A failure window without a report after the ejection ends resets.
	now = now.Add(10 * time.Second)
	if sc := eject(); sc.Ejections != 1 || !sc.EjectedUntil.Equal(now.Add(time.Millisecond+time.Second)) {
		t.Errorf("after a quiet window: got %d ejections until %s, want 1 until now+1.001s", sc.Ejections, formatTime(sc.EjectedUntil))
	}
	// Reports 10s apart never share a window.
	now = now.Add(time.Minute)
	for range 3 {
		n++
		id := "o" + strconv.Itoa(n)
		mustDispatch(t, s, request("p1", "b"+id, now, id))
		fail(t, s, "p1", id, "A", now)
		if sc := getScale(t, s, "p1", "A"); sc.Failures != 1 || sc.Health != dispatch.Up {
			t.Errorf("report in a new window: got %s, want 1 failure, up", formatHealth(sc))
		}
		now = now.Add(10 * time.Second)
	}
}

// Failure reports that cannot or need not move anything.
func testFailEdges(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", ejection(1, 10*time.Second, 30*time.Second), "A=0")
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2"))
	before := Snapshot(t, s, "p1")
	_, err := s.Fail(ctx, failRequest("p1", "o1", "A", at(time.Second)))
	wantErr(t, "report with no other Scale", err, dispatch.ErrNoEligibleScale)
	CheckUnchanged(t, s, before)
	if o := getOrder(t, s, "p1", "o1"); o.CompID != "A" || o.Moves != 0 {
		t.Errorf("after a refused report: got %s, want on A, no move", formatOrder(o))
	}
	_, err = s.Fail(ctx, failRequest("p1", "nope", "A", at(time.Second)))
	wantErr(t, "report of an unknown order", err, dispatch.ErrOrderNotFound, "nope")
	_, err = s.Fail(ctx, failRequest("nope", "o1", "A", at(time.Second)))
	wantErr(t, "report in an unknown pool", err, dispatch.ErrPoolNotFound, "nope")
	// Another Scale, or a finished order: the order as it stands.
	if r := fail(t, s, "p1", "o1", "B", at(time.Second)); r.Moved || r.Counted || r.Order.CompID != "A" {
		t.Errorf("report naming another Scale: got moved=%v counted=%v on %s", r.Moved, r.Counted, r.Order.CompID)
	}
	if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "o2"}}, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	if r := fail(t, s, "p1", "o2", "A", at(time.Second)); r.Moved || r.Counted || r.Order.State != dispatch.Completed {
		t.Errorf("report of a completed order: got moved=%v counted=%v %s", r.Moved, r.Counted, r.Order.State)
	}
	CheckUnchanged(t, s, Snapshot(t, s, "p1"))
	// The new Scale follows the pool's strategy, never the reported one.
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{OrderCount: ptr(int64(9))}, at(2*time.Second))
	putScale(t, s, "p1", "C", dispatch.ScaleSpec{OrderCount: ptr(int64(3))}, at(2*time.Second))
	r := fail(t, s, "p1", "o1", "A", at(3*time.Second))
	if r.Order.CompID != "C" || !r.Ejected {
		t.Errorf("report with B=9, C=3 under waterfill: got %s ejected=%v, want C, ejected (maxFails 1)", r.Order.CompID, r.Ejected)
	}
	if sc := getScale(t, s, "p1", "A"); sc.Outstanding != 0 || sc.Health != dispatch.Ejected {
		t.Errorf("A after the report: got outstanding %d %s", sc.Outstanding, formatHealth(sc))
	}
}
