package storetest

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Scale health (DESIGN §8): the tick, and the orders of lapsed Scales.

// onLapse reassign: the lapsed Scale's orders move, oldest first, in
// chunks of the tick's limit, each exactly once; hold keeps them.
func testLapseReassign(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", leases(5*time.Second, dispatch.ReassignLapsed), "A=0 B=10 C=10")
	healthPool(t, s, "p2", leases(5*time.Second, dispatch.Hold), "A=0 B=10")
	mustDispatch(t, s, request("p1", "b1", t0, ids("a", 5)...))
	mustDispatch(t, s, request("p2", "b1", t0, ids("a", 5)...))
	for _, id := range []string{"p1/B", "p1/C", "p2/B"} {
		heartbeat(t, s, id[:2], id[3:], nil, at(4*time.Second))
	}
	// Before the lapse, a tick moves nothing.
	if r := tick(t, s, "p1", at(4*time.Second), 2); len(r.Moves) != 0 || r.More {
		t.Errorf("tick before the lapse: got %d moves, more=%v", len(r.Moves), r.More)
	}
	r := tick(t, s, "p1", at(5*time.Second), 2)
	wantString(t, "first tick: changes", formatChanges(r.Changes), "A up>lapsed@5s")
	wantString(t, "first tick: moves", formatMoves(r.Moves), "a1 a2")
	if !r.More || r.Unsettled != 1 {
		t.Errorf("first tick: got more=%v unsettled=%d, want more, 1 unsettled", r.More, r.Unsettled)
	}
	_, moves := drain(t, s, "p1", at(5*time.Second), 2)
	wantString(t, "later ticks: moves", formatMoves(moves), "a3 a4 a5")
	for _, id := range ids("a", 5) {
		if o := getOrder(t, s, "p1", id); o.CompID == "A" || o.Moves != 1 || o.BatchID != "b1" || !o.AssignedAt.Equal(t0) {
			t.Errorf("moved order: got %s, want off A, 1 move, batch b1, assigned at t0", formatOrder(o))
		}
	}
	if _, moves := drain(t, s, "p1", at(6*time.Second), 2); len(moves) != 0 {
		t.Errorf("ticks after the move: got %s, want none", formatMoves(moves))
	}
	checkScaleOrders(t, s, "p1")
	_, moves = drain(t, s, "p2", at(6*time.Second), 2)
	if sc := getScale(t, s, "p2", "A"); len(moves) != 0 || sc.Outstanding != 5 || sc.Health != dispatch.Lapsed {
		t.Errorf("onLapse hold: got %d moves, A holds %d, %s", len(moves), sc.Outstanding, sc.Health)
	}
	// The revived Scale gets orders again.
	heartbeat(t, s, "p1", "A", nil, at(7*time.Second))
	b := mustDispatch(t, s, request("p1", "b2", at(7*time.Second), "x1"))
	wantString(t, "after the heartbeat", compIDs(b), "A")
	// The watch's counters: the five orders moved off the lapsed Scale
	// count once each; held orders do not count.
	if c := checkCounters(t, s, "p1", append(ids("a", 5), "x1"), 0); c.Moved != 5 {
		t.Errorf("p1: recorded %d moves, want 5", c.Moved)
	}
	if c := checkCounters(t, s, "p2", ids("a", 5), 0); c.Moved != 0 {
		t.Errorf("p2 (hold): recorded %d moves, want 0", c.Moved)
	}
}

// A lapsed Scale's orders move only as far as the eligible Scales have
// room; the rest wait for room, and no tick spins on them.
func testLapseReassignRoom(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", leases(5*time.Second, dispatch.ReassignLapsed), "A=0 B=100")
	mustDispatch(t, s, request("p1", "b1", t0, ids("a", 6)...))
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{OrderCount: ptr(int64(0)), MaxOrders: ptr(int64(2))}, t0)
	heartbeat(t, s, "p1", "B", nil, at(4*time.Second))
	_, moves := drain(t, s, "p1", at(5*time.Second), 10)
	wantString(t, "with room for 2", formatMoves(moves), "a1 a2")
	if sc := getScale(t, s, "p1", "A"); sc.Outstanding != 4 {
		t.Errorf("A after the room ran out: got %d outstanding, want 4", sc.Outstanding)
	}
	if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "a1"}}, at(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, moves = drain(t, s, "p1", at(6*time.Second), 10)
	wantString(t, "after room for 1 freed", formatMoves(moves), "a3")
}

// A tick settles at most its limit of due Scales, in the order of the
// Settling rules, and says there is more.
func testTickBounded(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", leases(5*time.Second, dispatch.Hold), "A=0 B=0 C=0 D=0 E=0")
	for i, id := range []string{"E", "D", "C"} {
		heartbeat(t, s, "p1", id, nil, at(time.Duration(i+1)*time.Second))
	}
	var got []string
	for range 4 {
		r := tick(t, s, "p1", at(time.Minute), 2)
		if len(r.Changes) > 2 {
			t.Errorf("tick with limit 2: got %d changes", len(r.Changes))
		}
		got = append(got, formatChanges(r.Changes))
		if !r.More {
			break
		}
	}
	want := "A up>lapsed@5s B up>lapsed@5s|E up>lapsed@6s D up>lapsed@7s|C up>lapsed@8s"
	if g := join(got, "|"); g != want {
		t.Errorf("ticks: got %s, want %s", g, want)
	}
	if r := tick(t, s, "p1", at(time.Minute), 2); r.More || len(r.Changes) != 0 || r.Unsettled != 5 {
		t.Errorf("last tick: got more=%v changes %d unsettled %d, want nothing, 5 unsettled", r.More, len(r.Changes), r.Unsettled)
	}
}

func join(ss []string, sep string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += sep
		}
		out += s
	}
	return out
}

// formatMoves lists the orders moved; a move that is not off A, or lands
// on A, shows as such.
func formatMoves(ms []dispatch.Move) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.OrderID
		if m.From != "A" || m.To == "A" || m.To == "" {
			out[i] += ":" + m.From + ">" + m.To
		}
	}
	return join(out, " ")
}

func isNoEligible(err error) bool { return errors.Is(err, dispatch.ErrNoEligibleScale) }

// A random mix of dispatches, heartbeats, failure reports, completions and
// ticks under both onLapse choices: no order lost or doubled (the suite's
// invariants), and no order ever handed to a Scale not up at that time.
func testHealthRandomWalk(t *testing.T, s dispatch.Store) {
	r := rand.New(rand.NewPCG(17, 4))
	spec := leases(3*time.Second, dispatch.ReassignLapsed)
	spec.MaxFails = ptr(int64(2))
	spec.FailWindow = ptr(2 * time.Second)
	spec.EjectTime = ptr(time.Second)
	healthPool(t, s, "p1", spec, "A=0 B=0 C=0 D=0")
	scales := []string{"A", "B", "C", "D"}
	var live, all []string
	n, failMoves, lapseMoves, ejections := 0, 0, 0, 0
	counted := int64(0)
	for step := range 400 {
		now := at(time.Duration(step) * 100 * time.Millisecond)
		switch k := r.IntN(10); {
		case k < 3:
			hb := scales[r.IntN(len(scales))]
			if hb != "D" || step < 100 { // D dies at 10s
				heartbeat(t, s, "p1", hb, nil, now)
			}
		case k < 6:
			n++
			id := "o" + strconv.Itoa(n)
			pool, err := s.GetPool(ctx, "p1")
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := s.Dispatch(ctx, request("p1", "b"+id, now, id))
			if err != nil {
				continue // nothing eligible
			}
			sc := getScale(t, s, "p1", b.Assignments[0].CompID)
			if h := pool.Health.HealthAt(sc, now); h != dispatch.Up {
				t.Fatalf("step %d: order %s went to %s, %s at that time", step, id, sc.CompID, h)
			}
			live = append(live, id)
			all = append(all, id)
		case k < 8 && len(live) > 0:
			id := live[r.IntN(len(live))]
			o := getOrder(t, s, "p1", id)
			fr, err := s.Fail(ctx, failRequest("p1", id, o.CompID, now))
			if err != nil && !isNoEligible(err) {
				t.Fatalf("step %d: Fail %s: %v", step, id, err)
			}
			if fr.Moved {
				failMoves++
			}
			counted += b2i(fr.Counted)
			if fr.Ejected {
				ejections++
			}
		case k < 9 && len(live) > 0:
			i := r.IntN(len(live))
			if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: live[i]}}, now); err != nil {
				t.Fatal(err)
			}
			live = append(live[:i], live[i+1:]...)
		default:
			_, moves := drain(t, s, "p1", now, 3)
			lapseMoves += len(moves)
		}
	}
	end := at(time.Minute)
	for _, id := range []string{"A", "B", "C"} {
		heartbeat(t, s, "p1", id, nil, end)
	}
	_, moves := drain(t, s, "p1", end, 3)
	lapseMoves += len(moves)
	if failMoves == 0 || lapseMoves == 0 || ejections == 0 {
		t.Errorf("the walk moved %d orders by reports, %d off lapsed Scales, ejected %d times: want some of each", failMoves, lapseMoves, ejections)
	}
	if sc := getScale(t, s, "p1", "D"); sc.Health != dispatch.Lapsed || sc.Outstanding != 0 {
		t.Errorf("D, silent since 10s: got %s with %d orders, want lapsed and emptied", sc.Health, sc.Outstanding)
	}
	checkScaleOrders(t, s, "p1")
	// The watch's counters: every move, by report or lapse, once.
	if c := checkCounters(t, s, "p1", all, counted); c.Moved != int64(failMoves+lapseMoves) || c.Failed < 2*int64(ejections) {
		t.Errorf("recorded %d moves and %d counted reports; the walk saw %d moves and %d ejections (2 reports each)", c.Moved, c.Failed, failMoves+lapseMoves, ejections)
	}
}
