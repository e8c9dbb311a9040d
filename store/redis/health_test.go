package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// healthPool creates pool p on st at t0 with the health options of spec
// and registers Scales ids at t0.
func healthPool(t testing.TB, st dispatch.Store, t0 time.Time, spec dispatch.PoolSpec, ids ...string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := st.PutPool(ctx, "p", spec, t0); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	for _, id := range ids {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, t0); err != nil {
			t.Fatalf("PutScale %s: %v", id, err)
		}
	}
}

// healthDispatch dispatches n orders named prefix-i in one batch at now and
// returns where each went.
func healthDispatch(t testing.TB, st dispatch.Store, prefix string, n int, now time.Time) map[string]string {
	t.Helper()
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "b-" + prefix, Now: now, MaxCost: dispatch.DefaultMaxCost}
	for i := range n {
		req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("%s-%d", prefix, i)})
		req.Rand = append(req.Rand, uint64(i), uint64(i+1))
	}
	b, _, err := st.Dispatch(context.Background(), req)
	if err != nil {
		t.Fatalf("Dispatch %s: %v", prefix, err)
	}
	out := make(map[string]string, n)
	for _, a := range b.Assignments {
		out[a.OrderID] = a.CompID
	}
	return out
}

// TestLeaseSmoke walks one Scale through a lapse, the move of its orders
// by ticks, and its return, on the Redis store alone.
func TestLeaseSmoke(t *testing.T) {
	st := newStore(t, redistest.Start(t), redis.Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	hb, reassign := time.Second, dispatch.ReassignLapsed
	healthPool(t, st, t0, dispatch.PoolSpec{HeartbeatTimeout: &hb, OnLapse: &reassign}, "A", "B", "C")
	got := healthDispatch(t, st, "o", 30, t0)
	held := 0
	for _, c := range got {
		if c == "C" {
			held++
		}
	}
	t1 := t0.Add(900 * time.Millisecond)
	for _, id := range []string{"A", "B"} {
		if _, err := st.Heartbeat(ctx, "p", id, nil, t1); err != nil {
			t.Fatalf("Heartbeat %s: %v", id, err)
		}
	}
	t2 := t0.Add(1500 * time.Millisecond)
	for id, c := range healthDispatch(t, st, "n", 10, t2) {
		if c == "C" {
			t.Errorf("order %s went to lapsed C", id)
		}
	}
	r, err := st.Tick(ctx, dispatch.TickRequest{Pool: "p", Now: t2, Limit: 4})
	if err != nil {
		t.Fatalf("Tick: %v", err)
	}
	t.Logf("tick: %+v", r)
	moved := len(r.Moves)
	for r.More {
		if r, err = st.Tick(ctx, dispatch.TickRequest{Pool: "p", Now: t2, Limit: 4}); err != nil {
			t.Fatalf("Tick: %v", err)
		}
		t.Logf("tick: %+v", r)
		moved += len(r.Moves)
	}
	if moved != held {
		t.Errorf("ticks moved %d orders, C held %d", moved, held)
	}
	sc, err := st.GetScale(ctx, "p", "C")
	if err != nil || sc.Health != dispatch.Lapsed || sc.Outstanding != 0 {
		t.Errorf("C after the ticks: %+v, %v", sc, err)
	}
	sc, err = st.Heartbeat(ctx, "p", "C", nil, t2.Add(time.Millisecond))
	if err != nil || sc.Health != dispatch.Up {
		t.Errorf("C after a heartbeat: %+v, %v", sc, err)
	}
	o, err := st.GetOrder(ctx, "p", "o-0", t2)
	t.Logf("order %+v %v", o, err)
	// Failure reports: maxFails 2 ejects.
	two := int64(2)
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{MaxFails: &two}, t2); err != nil {
		t.Fatal(err)
	}
	t3 := t2.Add(time.Millisecond)
	for i := range 3 {
		id := fmt.Sprintf("n-%d", i)
		o, err := st.GetOrder(ctx, "p", id, t3)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := st.Fail(ctx, dispatch.FailRequest{Pool: "p", OrderID: id, CompID: o.CompID, Now: t3, Rand: []uint64{1, 2}})
		t.Logf("fail %s on %s: %+v %v", id, o.CompID, fr, err)
		if err != nil && !errors.Is(err, dispatch.ErrNoEligibleScale) {
			t.Fatal(err)
		}
	}
	scales, _, _ := st.ListScales(ctx, "p", dispatch.Page{})
	for _, sc := range scales {
		t.Logf("%+v", sc)
	}
}
