package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestManyRaiseMidCall: the third batch of a coalesced call raises a Lua
// runtime error after the first two wrote (the waterfill's invariant "no
// room although the pool counted some", tripped by a meta r that counts
// more room than Scale A, maxOrders 4, has: the first two batches fill
// A). Redis keeps what a script wrote before it raised, so the first two
// batches are applied, and must be answered so: their batches, and the
// own index's tails and meta that the call writes at its end written too
// (a later batch of several must not take their batch ref again). The
// third is answered as failed, and applied nowhere. The call sent again
// answers the first two as before, applying nothing twice.
func TestManyRaiseMidCall(t *testing.T) {
	ctx := context.Background()
	c, st, t0 := raisePool(t)
	four := int64(4)
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{MaxOrders: &four}, t0); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, poolKey("p", "meta"), "r", "10").Err(); err != nil {
		t.Fatal(err)
	}
	batch := func(bid string, ids ...string) dispatch.DispatchRequest {
		req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost, BatchID: bid}
		for i, id := range ids {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
			req.Rand = append(req.Rand, uint64(i), uint64(i+1))
		}
		if bid == "" {
			req.BatchID = st.BatchID(req)
		}
		return req
	}
	reqs := []dispatch.DispatchRequest{
		batch("", "o1", "o2"), // named after o1: a token, its tail pending in the call
		batch("0190a6e4-7a1b-7c3d-8e4f-000000000002", "o3", "o4"),
		batch("", "o5", "o6"),
	}
	res := st.DispatchMany(ctx, reqs)
	for i, r := range res {
		t.Logf("batch %d: %v %v", i+1, r.Batch.Assignments, r.Err)
	}
	for i := range 2 {
		if res[i].Err != nil || len(res[i].Batch.Assignments) != 2 {
			t.Errorf("batch %d, applied before the third raised: %+v, %v; want its two orders on A", i+1, res[i].Batch, res[i].Err)
		}
	}
	if res[2].Err == nil {
		t.Errorf("batch 3, which raised: %+v; want a failure", res[2].Batch)
	}
	for i, id := range []string{"o1", "o2", "o3", "o4", "o5", "o6"} {
		o, err := st.GetOrder(ctx, "p", id, t0)
		if (i < 4) != (err == nil) || err == nil && o.CompID != "A" {
			t.Errorf("order %s after the call: %+v, %v", id, o, err)
		}
	}
	checkOwnIndex(t, c, st, "p")
	if got, _ := listScale(t, st, "A", 10, t0); fmt.Sprint(got) != "[o1 o2 o3 o4]" {
		t.Errorf("A lists %v, want [o1 o2 o3 o4]", got)
	}

	// Sent again: the first two answer as the first time, applying nothing.
	again := st.DispatchMany(ctx, reqs)
	for i := range 2 {
		if again[i].Err != nil || fmt.Sprint(again[i].Batch) != fmt.Sprint(res[i].Batch) {
			t.Errorf("batch %d sent again: %+v, %v; want %+v", i+1, again[i].Batch, again[i].Err, res[i].Batch)
		}
	}
	if again[2].Err == nil {
		t.Errorf("batch 3 sent again: %+v, want it to fail again", again[2].Batch)
	}
	if sc, err := st.GetScale(ctx, "p", "A"); err != nil || sc.Outstanding != 4 {
		t.Errorf("A after the call sent again: %+v, %v; want 4 orders", sc, err)
	}

	// A later batch of several takes a batch ref of its own.
	if _, _, err := st.PutScale(ctx, "p", "B", dispatch.ScaleSpec{}, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Dispatch(ctx, batch("", "o7", "o8")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if b, err := st.GetBatch(ctx, "p", reqs[i].BatchID, t0); err != nil || fmt.Sprint(b) != fmt.Sprint(res[i].Batch) {
			t.Errorf("batch %d after a later one: %+v, %v; want %+v", i+1, b, err, res[i].Batch)
		}
	}
	checkOwnIndex(t, c, st, "p")
}

// TestManyRaiseAfterWrites: the second batch of a coalesced call raises
// after it wrote its records (the retention queue bexp made a string, so
// that its RPUSH fails; a batch named after its first order has no entry
// there): it is answered as one that may have been applied, naming it, and
// its orders, which stay, are in their Scales' listings with the others'.
func TestManyRaiseAfterWrites(t *testing.T) {
	ctx := context.Background()
	c, st, t0 := raisePool(t, "A", "B")
	if err := c.Set(ctx, poolKey("p", "bexp"), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var reqs []dispatch.DispatchRequest
	for b, bid := range []string{"", "b-2", ""} {
		reqs = append(reqs, raiseBatch(st, t0, b, 4, bid))
	}
	res := st.DispatchMany(ctx, reqs)
	for i, r := range res {
		t.Logf("batch %d: %v %v", i+1, r.Batch.Assignments, r.Err)
	}
	if res[0].Err != nil || res[2].Err != nil {
		t.Errorf("batches 1 and 3: %v, %v; want them applied", res[0].Err, res[2].Err)
	}
	if ie, ok := errors.AsType[*dispatch.IndeterminateError](res[1].Err); !ok || ie.BatchID != "b-2" {
		t.Errorf("batch 2, which raised after it wrote: %v; want an IndeterminateError naming b-2", res[1].Err)
	}
	checkOwnIndex(t, c, st, "p")
	a, _ := listScale(t, st, "A", 100, t0)
	b, _ := listScale(t, st, "B", 100, t0)
	if len(a)+len(b) != 12 {
		t.Errorf("A lists %v and B %v, want the 12 orders", a, b)
	}
}

// TestRaiseAtCallEnd: a dispatch call that raises after its batches wrote
// (meta's counter n.d made a string, so that the call's last write,
// HINCRBY, fails) answers each batch as one that may have been applied,
// naming it, not as failed: a call of several batches and a call of one.
func TestRaiseAtCallEnd(t *testing.T) {
	ctx := context.Background()
	c, st, t0 := raisePool(t, "A", "B")
	if err := c.HSet(ctx, poolKey("p", "meta"), "n.d", "x").Err(); err != nil {
		t.Fatal(err)
	}
	var reqs []dispatch.DispatchRequest
	for b, n := range []int{3, 3, 1} {
		reqs = append(reqs, raiseBatch(st, t0, b, n, ""))
	}
	check := func(i int, err error) {
		t.Helper()
		ie, ok := errors.AsType[*dispatch.IndeterminateError](err)
		if !ok || ie.BatchID != reqs[i].BatchID {
			t.Errorf("batch %d: %v; want an IndeterminateError naming %s", i+1, err, reqs[i].BatchID)
		}
		// (before a later call, which would take the batch ref of the
		// first again: the call that raised did not write meta's bn)
		if _, err := st.GetBatch(ctx, "p", reqs[i].BatchID, t0); err != nil {
			t.Errorf("batch %d was not applied: %v", i+1, err)
		}
	}
	for i, r := range st.DispatchMany(ctx, reqs[:2]) {
		check(i, r.Err)
	}
	_, _, err := st.Dispatch(ctx, reqs[2])
	check(2, err)
}

// raiseBatch is batch b of n orders "o<b>-<i>" at t0, with batch id bid,
// or named after its first order when bid is empty.
func raiseBatch(st *redis.Store, t0 time.Time, b, n int, bid string) dispatch.DispatchRequest {
	req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost, BatchID: bid}
	for i := range n {
		req.Orders = append(req.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o%d-%d", b, i)})
		req.Rand = append(req.Rand, uint64(i), uint64(i+1))
	}
	if bid == "" {
		req.BatchID = st.BatchID(req)
	}
	return req
}

// raisePool starts a Redis with pool p of Scales ids, which it returns
// with its client, its store (retention 1h) and the time of its tests.
func raisePool(t *testing.T, ids ...string) (goredis.UniversalClient, *redis.Store, time.Time) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, ids...)
	return c, st, t0
}
