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

// TestManyRuntimeErrorMidCall: a call of three batches (DispatchMany)
// whose second raises a Lua runtime error (one of its order ids holds a
// record no build writes) after the first batch's writes. Whatever each
// batch is answered, the pool must stay whole: a batch answered with an
// error holds none of its orders, one answered with its batch holds all of
// them, listed on their Scales; the own index is whole (checkOwnIndex);
// each Scale's outstanding count is the number of orders listed on it;
// and a later batch gets a ref of its own (the earlier batch's assignments
// still read).
func TestManyRuntimeErrorMidCall(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	healthPool(t, st, now, dispatch.PoolSpec{}, "A", "B")
	if err := c.HSet(ctx, poolKey("p", "orders"), "bad", "garbage").Err(); err != nil {
		t.Fatal(err)
	}
	mk := func(ids ...string) dispatch.DispatchRequest {
		req := dispatch.DispatchRequest{Pool: "p", Now: now, MaxCost: dispatch.DefaultMaxCost}
		for _, id := range ids {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
		}
		req.BatchID = st.BatchID(req)
		return req
	}
	reqs := []dispatch.DispatchRequest{mk("a1", "a2", "a3", "a4"), mk("bad", "b2"), mk("c1", "c2", "c3", "c4")}
	res := st.DispatchMany(ctx, reqs)
	for i, r := range res {
		t.Logf("batch %d: %v, %v", i, r.Batch.Assignments, r.Err)
		for _, o := range reqs[i].Orders {
			if o.ID == "bad" {
				continue
			}
			_, err := st.GetOrder(ctx, "p", o.ID, now)
			switch {
			case r.Err != nil && !errors.Is(err, dispatch.ErrOrderNotFound):
				t.Errorf("batch %d answered %v, but its order %s is held (%v): a half-applied call", i, r.Err, o.ID, err)
			case r.Err == nil && err != nil:
				t.Errorf("batch %d answered its batch, but its order %s: %v", i, o.ID, err)
			}
		}
	}
	checkOwnIndex(t, c, st, "p")
	for _, comp := range []string{"A", "B"} {
		sc, err := st.GetScale(ctx, "p", comp)
		if err != nil {
			t.Fatal(err)
		}
		os, _, err := st.ListScaleOrders(ctx, "p", comp, dispatch.Page{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if int(sc.Outstanding) != len(os) {
			t.Errorf("Scale %s: outstanding %d, %d orders listed", comp, sc.Outstanding, len(os))
		}
	}
	// a later batch of several must not take the refs of the call's
	later := mk("d1", "d2", "d3", "d4")
	if _, _, err := st.Dispatch(ctx, later); err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			continue
		}
		b, err := st.GetBatch(ctx, "p", r.Batch.ID, now)
		if err != nil || fmt.Sprint(b.Assignments) != fmt.Sprint(r.Batch.Assignments) {
			t.Errorf("batch %d read back: %v, %v; want %v", i, b.Assignments, err, r.Batch.Assignments)
		}
	}
	checkOwnIndex(t, c, st, "p")
}
