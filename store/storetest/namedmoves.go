package storetest

import (
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// testNamedBatchMoves runs with a retention of 1h on batches with ids of
// the form the Redis store names them after their first order: a batch of
// one whose order fails over to another Scale and then is cancelled, and
// a batch of three whose first order moves when its Scale goes down and
// completes, while the pool's strategy changes in between. Each batch
// reads back as first answered (its first Scales, the strategy at
// dispatch time) until its window ends, and its orders name it. Ids of the
// named form that no batch has are not found: one made of a later order of
// the batch of three and its tag, the tag in capitals, one digit fewer or
// more.
func testNamedBatchMoves(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=5 C=5")
	const one, several = "s:1:0123456789ab", "m1:00000000000c"
	wantOne := `batch "s:1:0123456789ab" pool=p1 strategy=waterfill created=2025-03-01T12:00:00Z [s:1:A]`
	wantString(t, "batch of one", formatBatch(mustDispatch(t, s, request("p1", one, t0, "s:1"))), wantOne)
	b := mustDispatch(t, s, request("p1", several, t0, "m1", "m2", "m3"))
	wantSeveral := formatBatch(b)
	if b.Assignments[0].CompID != "A" {
		t.Fatalf("batch of three: %s, want m1 on A", wantSeveral)
	}

	if _, _, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{Strategy: ptr(dispatch.RoundRobin)}, at(time.Second)); err != nil {
		t.Fatalf("PutPool round-robin: %v", err)
	}
	if r := fail(t, s, "p1", "s:1", "A", at(2*time.Second)); !r.Moved {
		t.Fatalf("Fail s:1 on A: %+v, want it moved", r)
	}
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, at(3*time.Second))
	if _, err := s.Reassign(ctx, dispatch.ReassignRequest{Pool: "p1", CompID: "A", Now: at(3 * time.Second),
		Rand: make([]uint64, 8), MaxCost: dispatch.DefaultMaxCost}); err != nil {
		t.Fatalf("Reassign: %v", err)
	}
	if o := getOrder(t, s, "p1", "m1"); o.CompID == "A" || o.BatchID != several || o.Moves != 1 {
		t.Errorf("m1 after its Scale went down: %s, want it moved off A, of batch %s", formatOrder(o), several)
	}
	if _, err := s.Cancel(ctx, "p1", "s:1", at(4*time.Second)); err != nil {
		t.Fatalf("Cancel s:1: %v", err)
	}
	if _, _, err := complete(s, "p1", at(5*time.Second), "m1"); err != nil {
		t.Fatalf("Complete m1: %v", err)
	}
	if o := getOrder(t, s, "p1", "s:1"); o.BatchID != one || o.State != dispatch.Cancelled || o.Moves != 1 {
		t.Errorf("s:1: %s, want it cancelled, of batch %s", formatOrder(o), one)
	}
	for _, now := range []time.Time{at(5 * time.Second), at(time.Hour)} {
		touch(t, s, "p1", now)
		for id, want := range map[string]string{one: wantOne, several: wantSeveral} {
			b, err := s.GetBatch(ctx, "p1", id, now)
			if err != nil {
				t.Errorf("GetBatch %s at %v: %v", id, now, err)
				continue
			}
			wantString(t, "batch "+id+" after its orders moved", formatBatch(b), want)
		}
	}
	for _, id := range []string{"m2:00000000000c", "m3:00000000000c", "s:1:0123456789AB", "s:1:0123456789a",
		"s:1:0123456789abc", "s:0123456789ab", "1:0123456789ab", "m1:00000000000C"} {
		_, err := s.GetBatch(ctx, "p1", id, at(time.Hour))
		wantErr(t, "GetBatch "+id, err, dispatch.ErrBatchNotFound)
	}
	touch(t, s, "p1", at(time.Hour+time.Millisecond))
	for _, id := range []string{one, several} {
		_, err := s.GetBatch(ctx, "p1", id, at(time.Hour+time.Millisecond))
		wantErr(t, "GetBatch "+id+" after its window", err, dispatch.ErrBatchNotFound)
	}
	if o := getOrder(t, s, "p1", "m2"); o.BatchID != several {
		t.Errorf("m2 after its batch's window: %s, want it of batch %s", formatOrder(o), several)
	}
}

// testNamedBatchLapse runs with a retention of 1h: the orders of a named
// batch of one and of a named batch of two move off a Scale whose lease
// lapsed (a tick, onLapse reassign); both batches read back as first
// answered, and the orders name them.
func testNamedBatchLapse(t *testing.T, s dispatch.Store) {
	healthPool(t, s, "p1", leases(5*time.Second, dispatch.ReassignLapsed), "A=0 B=10 C=10")
	const one, several = "s1:00000000000e", "n1:00000000000f"
	wants := map[string]string{
		one:     `batch "s1:00000000000e" pool=p1 strategy=waterfill created=2025-03-01T12:00:00Z [s1:A]`,
		several: `batch "n1:00000000000f" pool=p1 strategy=waterfill created=2025-03-01T12:00:00Z [n1:A n2:A]`,
	}
	wantString(t, "batch of one", formatBatch(mustDispatch(t, s, request("p1", one, t0, "s1"))), wants[one])
	wantString(t, "batch of two", formatBatch(mustDispatch(t, s, request("p1", several, t0, "n1", "n2"))), wants[several])
	heartbeat(t, s, "p1", "B", nil, at(4*time.Second))
	heartbeat(t, s, "p1", "C", nil, at(4*time.Second))
	if _, moves := drain(t, s, "p1", at(5*time.Second), 2); len(moves) != 3 {
		t.Fatalf("ticks after A lapsed: moves %s, want s1, n1 and n2", formatMoves(moves))
	}
	for id, batch := range map[string]string{"s1": one, "n1": several, "n2": several} {
		if o := getOrder(t, s, "p1", id); o.CompID == "A" || o.Moves != 1 || o.BatchID != batch || !o.AssignedAt.Equal(t0) {
			t.Errorf("moved order: %s, want off A, 1 move, batch %s, assigned at t0", formatOrder(o), batch)
		}
	}
	for id, want := range wants {
		b, err := s.GetBatch(ctx, "p1", id, at(time.Hour))
		if err != nil {
			t.Errorf("GetBatch %s: %v", id, err)
			continue
		}
		wantString(t, "batch "+id+" after its orders moved", formatBatch(b), want)
	}
}
