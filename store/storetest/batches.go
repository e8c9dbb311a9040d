package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

func testNoEligibleScale(t *testing.T, s dispatch.Store) {
	refuse := func(pool string, n int) {
		t.Helper()
		before := Snapshot(t, s, pool)
		req := request(pool, "refused", t0, ids("x", n)...)
		_, _, err := s.Dispatch(ctx, req)
		wantErr(t, "Dispatch into "+pool, err, dispatch.ErrNoEligibleScale)
		req.DryRun, req.BatchID = true, ""
		_, _, err = s.Dispatch(ctx, req)
		wantErr(t, "dry run into "+pool, err, dispatch.ErrNoEligibleScale)
		CheckUnchanged(t, s, before)
		wantGone(t, s, pool, req.Orders[0].ID)
		_, err = s.GetBatch(ctx, pool, "refused", t0)
		wantErr(t, "GetBatch of a refused batch", err, dispatch.ErrBatchNotFound)
	}
	newPool(t, s, "empty", "")
	refuse("empty", 1)

	newPool(t, s, "idle", "A=0 B=0")
	putScale(t, s, "idle", "A", dispatch.ScaleSpec{State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "idle", "B", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, t0)
	refuse("idle", 1)

	newPool(t, s, "full", "A=2")
	putScale(t, s, "full", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(2))}, t0)
	refuse("full", 1)

	// A has room for 2 and B for 2: 5 orders are refused, 4 fill both.
	newPool(t, s, "room", "A=1 B=0")
	putScale(t, s, "room", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(3))}, t0)
	putScale(t, s, "room", "B", dispatch.ScaleSpec{MaxOrders: ptr(int64(2))}, t0)
	refuse("room", 5)
	mustDispatch(t, s, request("room", "b1", t0, ids("o", 4)...))
	wantString(t, "loads", loads(t, s, "room"), "A=3 B=2")
	refuse("room", 1)

	// An unlimited Scale makes room for any batch.
	putScale(t, s, "room", "C", dispatch.ScaleSpec{OrderCount: ptr(int64(100))}, t0)
	mustDispatch(t, s, request("room", "b2", t0, ids("q", 5)...))
	wantString(t, "loads", loads(t, s, "room"), "A=3 B=2 C=105")

	// No Scale passes orderCount 2^31−1 (DESIGN §1). The waterfill raises
	// the lowest Scales by at most the batch's size.
	newPool(t, s, "cap", "A=2147483646 B=2147483645")
	mustDispatch(t, s, request("cap", "b1", t0, ids("c", 2)...))
	wantString(t, "loads", loads(t, s, "cap"), "A=2147483647 B=2147483646")
	refuse("cap", 2)
	mustDispatch(t, s, request("cap", "b2", t0, "d-1"))
	wantString(t, "loads", loads(t, s, "cap"), "A=2147483647 B=2147483647")
	refuse("cap", 1)
	// Any other strategy may give the whole batch to the highest Scale.
	strategyPool(t, s, "capr", dispatch.Random, "A=2147483640 B=0")
	mustDispatch(t, s, request("capr", "b1", t0, ids("c", 7)...))
	refuse("capr", 1)
	// A Scale with maxOrders cannot pass the bound, as maxOrders cannot.
	strategyPool(t, s, "capm", dispatch.Random, "A=2147483640 B=0")
	putScale(t, s, "capm", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(dispatch.MaxOrderCount))}, t0)
	mustDispatch(t, s, request("capm", "b1", t0, ids("c", 10)...))
	// The waterfill's orders reach the lowest Scale without maxOrders once
	// those below it fill up.
	newPool(t, s, "capw", "A=0 B=2147483646")
	putScale(t, s, "capw", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(1))}, t0)
	refuse("capw", 3)
	mustDispatch(t, s, request("capw", "b1", t0, "e-1"))
	mustDispatch(t, s, request("capw", "b2", t0, "e-2"))
	wantString(t, "loads", loads(t, s, "capw"), "A=1 B=2147483647")
	refuse("capw", 1)
}

func testOrderExists(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	newPool(t, s, "p2", "A=0")
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2", "o3"))
	if _, _, err := s.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "o1"}}, t0); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if _, err := s.Cancel(ctx, "p1", "o3", t0); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	before := Snapshot(t, s, "p1")
	for _, held := range []string{"o1", "o2", "o3"} {
		for _, dry := range []bool{false, true} {
			req := request("p1", "b2", at(time.Second), "n1", held, "n2")
			if dry {
				req.DryRun, req.BatchID = true, ""
			}
			_, _, err := s.Dispatch(ctx, req)
			wantErr(t, "Dispatch with "+held, err, dispatch.ErrOrderExists, held)
		}
	}
	CheckUnchanged(t, s, before)
	wantGone(t, s, "p1", "n1", "n2")
	_, err := s.GetBatch(ctx, "p1", "b2", t0)
	wantErr(t, "GetBatch of a refused batch", err, dispatch.ErrBatchNotFound)

	// Order ids are scoped to their pool.
	mustDispatch(t, s, request("p2", "b1", t0, "o1", "o2", "o3"))
}

func testIdempotency(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=2")
	newPool(t, s, "p2", "A=0")
	keyed := func(pool, batchID string, now time.Time, fingerprint string, orderIDs ...string) dispatch.DispatchRequest {
		req := request(pool, batchID, now, orderIDs...)
		req.IdempotencyKey, req.Fingerprint, req.IdempotencyTTL = "k1", fingerprint, time.Hour
		return req
	}
	first := mustDispatch(t, s, keyed("p1", "b1", t0, "fp1", "o1", "o2", "o3"))
	before := Snapshot(t, s, "p1")

	for _, now := range []time.Time{at(time.Minute), at(time.Hour)} {
		b, replayed, err := s.Dispatch(ctx, keyed("p1", "b2", now, "fp1", "o1", "o2", "o3"))
		if err != nil || !replayed {
			t.Fatalf("retry at %s: got replayed %v, %v, want true, nil", formatTime(now), replayed, err)
		}
		wantString(t, "replay", formatBatch(b), formatBatch(first))
	}
	_, _, err := s.Dispatch(ctx, keyed("p1", "b3", at(time.Minute), "fp2", "o4"))
	wantErr(t, "key with another request", err, dispatch.ErrIdempotencyMismatch, "k1")
	CheckUnchanged(t, s, before)
	for _, id := range []string{"b2", "b3"} {
		_, err := s.GetBatch(ctx, "p1", id, t0)
		wantErr(t, "GetBatch "+id, err, dispatch.ErrBatchNotFound)
	}

	// Keys are scoped to their pool.
	b := mustDispatch(t, s, keyed("p2", "b1", at(time.Minute), "fp2", "o4"))
	wantString(t, "batch in p2", compIDs(b), "A")

	// After its TTL the key is free again.
	b = mustDispatch(t, s, keyed("p1", "b4", at(time.Hour+time.Second), "fp2", "o4"))
	wantString(t, "batch after the key expired", formatBatch(b),
		`batch "b4" pool=p1 strategy=waterfill created=2025-03-01T13:00:01Z [o4:A]`)
	b, replayed, err := s.Dispatch(ctx, keyed("p1", "b5", at(time.Hour+time.Minute), "fp2", "o4"))
	if err != nil || !replayed || b.ID != "b4" {
		t.Errorf("retry of the new request: got batch %s, replayed %v, %v, want b4, true, nil", b.ID, replayed, err)
	}
}

func testBatchIDRetry(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	first := mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2", "o3"))
	before := Snapshot(t, s, "p1")
	for _, now := range []time.Time{t0, at(time.Minute)} {
		b := mustDispatch(t, s, request("p1", "b1", now, "o1", "o2", "o3"))
		wantString(t, "retry", formatBatch(b), formatBatch(first))
	}
	CheckUnchanged(t, s, before)
	wantString(t, "loads", loads(t, s, "p1"), "A=1 B=2")
}

func testDryRun(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "S1=1 S2=5 S3=12")
	newPool(t, s, "p2", "A=0 B=0 C=0")
	putScale(t, s, "p2", "A", dispatch.ScaleSpec{MaxOrders: ptr(int64(1))}, t0)
	for _, tc := range []struct{ pool, want string }{{"p1", seedSequence}, {"p2", "B A C B C"}} {
		n := len(strings.Fields(tc.want))
		before := Snapshot(t, s, tc.pool)
		req := request(tc.pool, "", at(time.Second), ids("o", n)...)
		req.DryRun = true
		for range 2 {
			b, replayed, err := s.Dispatch(ctx, req)
			if err != nil || replayed {
				t.Fatalf("dry run: got replayed %v, %v, want false, nil", replayed, err)
			}
			wantString(t, "dry run", compIDs(b), tc.want)
			if b.ID != "" || b.Pool != tc.pool || b.Strategy != dispatch.Waterfill || !b.CreatedAt.Equal(at(time.Second)) {
				t.Errorf("dry run: got %s, want no id, pool %s, waterfill, created at %s", formatBatch(b), tc.pool, formatTime(at(time.Second)))
			}
			CheckUnchanged(t, s, before)
			wantGone(t, s, tc.pool, ids("o", n)...)
		}
		req.DryRun, req.BatchID = false, "b1"
		wantString(t, "the real batch", compIDs(mustDispatch(t, s, req)), tc.want)
	}
}
