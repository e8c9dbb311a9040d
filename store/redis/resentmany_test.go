package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// TestResentBatchesWithKeysAndRepeat: calls whose replies are lost, which
// go-redis re-sends, answer as their first run did. A coalesced call of a
// batch with order keys (its key run), one that repeats an order id (sent
// to the store directly, UniqueIDs unset), one without keys and one named
// after its first order with keys: the three recorded once, each order's
// key as sent, the batch of the repeated id ErrDuplicateOrder with none of
// its orders stored; then a single Dispatch with keys, and one that
// repeats an id.
func TestResentBatchesWithKeysAndRepeat(t *testing.T) {
	srv, px, st, svc := proxiedService(t)
	direct := newClient(t, srv)
	ctx := context.Background()
	mustPool(t, svc, "p", "A", "B", "C")
	now := time.Now().Truncate(time.Millisecond)
	req := func(batchID string, ids ...string) dispatch.DispatchRequest {
		r := dispatch.DispatchRequest{Pool: "p", BatchID: batchID, Now: now,
			Rand: make([]uint64, 2*len(ids)), IdempotencyTTL: dispatch.DefaultIdempotencyTTL}
		for i, id := range ids {
			o := dispatch.OrderInput{ID: id}
			if i%2 == 1 {
				o.Key = fmt.Sprintf("cust|%d,%s", i, id)
			}
			r.Orders = append(r.Orders, o)
		}
		return r
	}
	resent := func(what string, call func()) {
		t.Helper()
		lost, runs := px.Dropped(), fcallCalls(t, direct)
		px.DropNext(1)
		call()
		if px.Dropped() != lost+1 || fcallCalls(t, direct)-runs != 2 {
			t.Fatalf("%s: %d replies lost, %d FCALLs; want 1 and 2 (the call and go-redis's retry)",
				what, px.Dropped()-lost, fcallCalls(t, direct)-runs)
		}
	}
	wantKeys := func(r dispatch.DispatchRequest) {
		t.Helper()
		for _, o := range r.Orders {
			got, err := st.GetOrder(ctx, "p", o.ID, now)
			if err != nil || got.Key != o.Key || got.BatchID != r.BatchID {
				t.Errorf("order %s: got key %q batch %q, %v; want key %q batch %s", o.ID, got.Key, got.BatchID, err, o.Key, r.BatchID)
			}
		}
	}
	wantGone := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if _, err := st.GetOrder(ctx, "p", id, now); !errors.Is(err, dispatch.ErrOrderNotFound) {
				t.Errorf("order %s of a refused batch: %v, want ErrOrderNotFound", id, err)
			}
		}
	}

	reqs := []dispatch.DispatchRequest{
		req("k1", "k1-1", "k1-2", "k1-3", "k1-4"),
		req("d1", "d1-1", "d1-2", "d1-1"),
		{Pool: "p", BatchID: "u1", Now: now, Rand: make([]uint64, 4), Orders: []dispatch.OrderInput{{ID: "u1-1"}, {ID: "u1-2"}}},
		req("n1-1:0123456789ab", "n1-1", "n1-2", "n1-3"), // named after its first order (batchid.go)
	}
	var many []dispatch.DispatchResult
	resent("DispatchMany", func() { many = st.DispatchMany(ctx, reqs) })
	for _, i := range []int{0, 2, 3} {
		if r := many[i]; r.Err != nil || r.Replayed || r.Batch.ID != reqs[i].BatchID || len(r.Batch.Assignments) != len(reqs[i].Orders) {
			t.Fatalf("DispatchMany batch %d: %+v, want batch %s", i, r, reqs[i].BatchID)
		}
		wantKeys(reqs[i])
	}
	if !errors.Is(many[1].Err, dispatch.ErrDuplicateOrder) {
		t.Fatalf("DispatchMany batch 1: %v, want ErrDuplicateOrder", many[1].Err)
	}
	wantGone("d1-1", "d1-2")

	one := req("k2", "k2-1", "k2-2")
	resent("Dispatch", func() {
		if b, replayed, err := st.Dispatch(ctx, one); err != nil || replayed || b.ID != "k2" || len(b.Assignments) != 2 {
			t.Fatalf("Dispatch k2: %v, %v, %v", b, replayed, err)
		}
	})
	wantKeys(one)
	resent("Dispatch of a repeated id", func() {
		if _, _, err := st.Dispatch(ctx, req("d2", "d2-1", "d2-2", "d2-2")); !errors.Is(err, dispatch.ErrDuplicateOrder) {
			t.Fatalf("Dispatch d2: %v, want ErrDuplicateOrder", err)
		}
	})
	wantGone("d2-1", "d2-2")
	for _, r := range []dispatch.DispatchRequest{reqs[0], reqs[2], reqs[3], one} {
		b, err := st.GetBatch(ctx, "p", r.BatchID, now)
		if err != nil || len(b.Assignments) != len(r.Orders) {
			t.Errorf("GetBatch %s: %v, %v", r.BatchID, b, err)
		}
	}
	checkCounts(t, st, "p", []string{"k1-1", "k1-2", "k1-3", "k1-4", "u1-1", "u1-2", "n1-1", "n1-2", "n1-3", "k2-1", "k2-2"})
}
