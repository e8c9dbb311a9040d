package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// testRepeatedOrder sends the store requests that repeat an order id, as a
// caller other than the Service may (UniqueIDs unset): each fails with
// ErrDuplicateOrder naming the id and changes nothing, at every size (past
// the Redis store's read chunks of 1000), with and without order keys, as
// a dry run too. A retried batch id, an Idempotency-Key's replay and its
// misuse answer before the check, as they did when the Redis script found
// the repeat itself, and the check comes before an order held, before or
// after the repeat, and before the room; an order held before fails a large batch
// with ErrOrderExists.
func testRepeatedOrder(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0 C=0")
	first := mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2"))
	kreq := request("p1", "bk", t0, "k1")
	kreq.IdempotencyKey, kreq.Fingerprint = "key-1", "fp-1"
	keyedFirst := mustDispatch(t, s, kreq)
	before := Snapshot(t, s, "p1")

	for _, n := range []int{2, 17, 1001, 2500} {
		for _, withKeys := range []bool{false, true} {
			for _, dry := range []bool{false, true} {
				what := fmt.Sprintf("%d orders, keys %v, dry %v", n, withKeys, dry)
				req := request("p1", fmt.Sprintf("r%d", n), at(time.Second), ids(fmt.Sprintf("r%d-", n), n)...)
				if withKeys {
					for i := range req.Orders {
						if i%3 == 1 {
							req.Orders[i].Key = fmt.Sprintf("c|%d,x", i)
						}
					}
				}
				rep := req.Orders[(n-1)/2].ID
				req.Orders[n-1].ID = rep
				if dry {
					req.DryRun, req.BatchID = true, ""
				}
				_, _, err := s.Dispatch(ctx, req)
				wantErr(t, what, err, dispatch.ErrDuplicateOrder, rep)
				CheckUnchanged(t, s, before)
				wantGone(t, s, "p1", req.Orders[0].ID, rep, req.Orders[n-2].ID)
			}
		}
	}

	// A retried batch answers its batch; a replayed key its batch.
	retry := request("p1", "b1", at(time.Second), "o1", "o2", "o1")
	b, replayed, err := s.Dispatch(ctx, retry)
	if err != nil || replayed {
		t.Fatalf("a retried batch with a repeated id: got replayed %v, %v, want the batch", replayed, err)
	}
	wantString(t, "retried batch", formatBatch(b), formatBatch(first))
	replay := request("p1", "bk2", at(time.Second), "z1", "z1")
	replay.IdempotencyKey, replay.Fingerprint = "key-1", "fp-1"
	b, replayed, err = s.Dispatch(ctx, replay)
	if err != nil || !replayed {
		t.Fatalf("a replayed key with a repeated id: got replayed %v, %v, want its batch replayed", replayed, err)
	}
	wantString(t, "replay", formatBatch(b), formatBatch(keyedFirst))
	replay.Fingerprint = "fp-2"
	_, _, err = s.Dispatch(ctx, replay)
	wantErr(t, "a misused key with a repeated id", err, dispatch.ErrIdempotencyMismatch)
	// A batch with an id of the form the Redis store names batches after
	// their first order (dispatch.BatchNamer) is checked the same.
	_, _, err = s.Dispatch(ctx, request("p1", "z1:0123456789ab", at(time.Second), "z1", "z2", "z1"))
	wantErr(t, "a batch named after its first order", err, dispatch.ErrDuplicateOrder, "z1")
	wantGone(t, s, "p1", "z1", "z2")
	// A repeat fails before an order held after it, and before the room.
	_, _, err = s.Dispatch(ctx, request("p1", "b3", at(time.Second), "z1", "z1", "o2"))
	wantErr(t, "a repeated id before a held one", err, dispatch.ErrDuplicateOrder, "z1")
	// and after it: the Service finds a repeat before a store is asked.
	_, _, err = s.Dispatch(ctx, request("p1", "b3", at(time.Second), "o2", "z1", "z1"))
	wantErr(t, "a repeated id after a held one", err, dispatch.ErrDuplicateOrder, "z1")
	CheckUnchanged(t, s, before)
	newPool(t, s, "full", "")
	putScale(t, s, "full", "D", dispatch.ScaleSpec{MaxOrders: ptr(int64(1)), OrderCount: ptr(int64(1))}, t0)
	_, _, err = s.Dispatch(ctx, request("full", "b1", t0, "z1", "z2", "z1"))
	wantErr(t, "a repeated id in a pool without room", err, dispatch.ErrDuplicateOrder, "z1")
	_, _, err = s.Dispatch(ctx, request("full", "b1", t0, "z1", "z2"))
	wantErr(t, "no repeated id in a pool without room", err, dispatch.ErrNoEligibleScale)

	// An order held fails a batch beyond the first read chunk; without
	// it the batch is recorded with each order's key as sent.
	big := request("p1", "big", at(time.Second), ids("big-", 2500)...)
	for i := range big.Orders {
		if i%3 == 1 {
			big.Orders[i].Key = fmt.Sprintf("c|%d,x", i)
		}
	}
	big.Orders[1700].ID = "o2"
	_, _, err = s.Dispatch(ctx, big)
	wantErr(t, "a batch of 2500 holding o2 at 1700", err, dispatch.ErrOrderExists, "o2")
	CheckUnchanged(t, s, before)
	wantGone(t, s, "p1", "big-1", "big-2500")
	big.Orders[1700].ID = "big-1701"
	mustDispatch(t, s, big)
	// So does a batch named after its first order (the Redis store's
	// named-batch path), keys on some orders.
	named := request("p1", "n1:0123456789ab", at(time.Second), "n1", "n2", "n3", "n4")
	named.Orders[1].Key, named.Orders[3].Key = "c|n2,", "c|n4"
	mustDispatch(t, s, named)
	for _, o := range named.Orders {
		if got := getOrder(t, s, "p1", o.ID); got.Key != o.Key || got.BatchID != named.BatchID {
			t.Errorf("order %s: got %s, want key %q in batch %s", o.ID, formatOrder(got), o.Key, named.BatchID)
		}
	}
	for _, i := range []int{0, 1, 999, 1000, 1001, 1699, 1700, 2497, 2498, 2499} {
		o := getOrder(t, s, "p1", big.Orders[i].ID)
		if o.Key != big.Orders[i].Key || o.BatchID != "big" {
			t.Errorf("order %d: got %s, want key %q in batch big", i, formatOrder(o), big.Orders[i].Key)
		}
	}
}
