package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestTwoStoresInterleaved: two Stores of different retentions share one
// Redis and call the library's functions for their pools in turn, which
// must each act on the keys and the settings of their own call, whatever
// the call before them bound (the preamble binds a function's pool keys
// again only when its first key changes; dispatch.lua keeps the settings
// strings it parsed). The same batch and order ids in both pools, a pool
// deleted and created again, and FUNCTION FLUSH between calls.
func TestTwoStoresInterleaved(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	direct := newClient(t, srv)
	st := []*redis.Store{
		redis.New(newClient(t, srv), redis.Options{Retention: time.Hour}),
		redis.New(newClient(t, srv), redis.Options{Retention: 3 * time.Hour}),
	}
	pools, comps := []string{"p0", "p1"}, []string{"A", "B"}
	t0 := time.Now().Truncate(time.Millisecond)
	setUp := func(i int) {
		t.Helper()
		if _, _, err := st[i].PutPool(ctx, pools[i], dispatch.PoolSpec{}, t0); err != nil {
			t.Fatalf("PutPool %s: %v", pools[i], err)
		}
		if _, _, err := st[i].PutScale(ctx, pools[i], comps[i], dispatch.ScaleSpec{}, t0); err != nil {
			t.Fatalf("PutScale %s: %v", pools[i], err)
		}
	}
	dispatchIn := func(i int, batchID string, keyed bool) {
		t.Helper()
		req := dispatch.DispatchRequest{Pool: pools[i], BatchID: batchID, Now: t0, Rand: make([]uint64, 4),
			Orders: []dispatch.OrderInput{{ID: batchID + "-o1"}, {ID: batchID + "-o2"}}, IdempotencyTTL: time.Minute}
		if keyed {
			req.Orders[1].Key = "key|" + pools[i]
		}
		b, replayed, err := st[i].Dispatch(ctx, req)
		if err != nil || replayed || b.Pool != pools[i] {
			t.Fatalf("Dispatch %s in %s: %+v, %v, %v", batchID, pools[i], b, replayed, err)
		}
		for _, a := range b.Assignments {
			if a.CompID != comps[i] {
				t.Fatalf("Dispatch %s in %s: order %s went to %s, a Scale of the other pool", batchID, pools[i], a.OrderID, a.CompID)
			}
		}
		o, err := st[i].GetOrder(ctx, pools[i], batchID+"-o2", t0)
		if err != nil || o.Key != req.Orders[1].Key || o.BatchID != batchID {
			t.Fatalf("order %s-o2 in %s: %+v, %v; want key %q batch %s", batchID, pools[i], o, err, req.Orders[1].Key, batchID)
		}
	}
	for i := range st {
		setUp(i)
	}
	// Rounds of both: the same settings strings again, with keys and
	// without.
	rounds := []string{"b1", "r2", "r3", "r4"}
	for r, b := range rounds {
		dispatchIn(0, b, r%2 == 0)
		dispatchIn(1, b, r%3 == 0)
	}
	if _, n, err := st[0].Complete(ctx, pools[0], []dispatch.Completion{{OrderID: "b1-o1"}}, t0); err != nil || n != 1 {
		t.Fatalf("Complete o1 in p0: %d, %v", n, err)
	}
	if _, err := st[1].Cancel(ctx, pools[1], "b1-o1", t0); err != nil {
		t.Fatalf("Cancel o1 in p1: %v", err)
	}
	for i, want := range []dispatch.OrderState{dispatch.Completed, dispatch.Cancelled} {
		if o, err := st[1-i].GetOrder(ctx, pools[i], "b1-o1", t0); err != nil || o.State != want {
			t.Errorf("order o1 in %s: %s, %v; want %s", pools[i], o.State, err, want)
		}
	}
	// Each batch record lasts its own store's retention.
	later := t0.Add(2 * time.Hour)
	for _, id := range rounds {
		if _, err := st[0].GetBatch(ctx, pools[0], id, later); !errors.Is(err, dispatch.ErrBatchNotFound) {
			t.Errorf("batch %s of p0 (retention 1h) 2h on: %v, want ErrBatchNotFound", id, err)
		}
		if b, err := st[1].GetBatch(ctx, pools[1], id, later); err != nil || b.Assignments[0].CompID != comps[1] {
			t.Errorf("batch %s of p1 (retention 3h) 2h on: %+v, %v", id, b, err)
		}
	}

	// p0 goes and comes back between p1's calls; then the library goes.
	if err := st[0].DeletePool(ctx, pools[0]); err != nil {
		t.Fatalf("DeletePool p0: %v", err)
	}
	dispatchIn(1, "b2", true)
	setUp(0)
	dispatchIn(0, "b1", false) // (b1 and its orders went with the pool)
	if err := direct.FunctionFlush(ctx).Err(); err != nil {
		t.Fatalf("FUNCTION FLUSH: %v", err)
	}
	dispatchIn(1, "b3", false)
	dispatchIn(0, "b3", true)
}
