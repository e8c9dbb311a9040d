package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// RunMulti runs the tests of dispatch.MultiDispatcher against the stores
// newStore makes, which must implement it: DispatchMany must answer and
// change exactly what Dispatch does for the same requests one after
// another, and a Service coalescing concurrent batches must lose none.
func RunMulti(t *testing.T, newStore Factory) {
	for _, tc := range []struct {
		name string
		opts Options
		run  func(t *testing.T, s dispatch.Store, md dispatch.MultiDispatcher)
	}{
		{"Sequential", Options{}, testManyLikeSequential},
		{"NoPool", Options{}, testManyNoPool},
		{"Retention", Options{Retention: time.Hour}, testManyRetention},
		{"Coalesced", Options{}, testCoalescedService},
		{"Counters", Options{}, testManyCounters},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, tc.opts)
			md, ok := s.(dispatch.MultiDispatcher)
			if !ok {
				t.Fatalf("%T does not implement dispatch.MultiDispatcher", s)
			}
			tc.run(t, s, md)
		})
	}
}

// manyRequests is a list of batches for pool that meet every rule of a
// dispatch: new batches (two of them with order keys), an order a batch
// before it holds, an
// Idempotency-Key replayed and misused, a retried batch id, a duplicate
// order, a batch too large for the room left.
func manyRequests(pool string) []dispatch.DispatchRequest {
	r := func(batchID string, orderIDs ...string) dispatch.DispatchRequest {
		req := request(pool, batchID, at(time.Second), orderIDs...)
		for i := range req.Rand {
			req.Rand[i] = uint64(len(batchID)*7919+i*104729) % (1 << 53)
		}
		return req
	}
	withKey := func(req dispatch.DispatchRequest, key, fp string) dispatch.DispatchRequest {
		req.IdempotencyKey, req.Fingerprint = key, fp
		return req
	}
	// keyed gives every other order of req a key, from the first
	keyed := func(req dispatch.DispatchRequest) dispatch.DispatchRequest {
		for i := 0; i < len(req.Orders); i += 2 {
			req.Orders[i].Key = "key-" + req.Orders[i].ID
		}
		return req
	}
	return []dispatch.DispatchRequest{
		withKey(r("b1", "o1", "o2", "o3"), "k1", "f1"),
		keyed(r("b2", "o4")),
		r("b3", "o9", "o2"),                    // o2 is b1's: ErrOrderExists
		withKey(r("b4", "o10"), "k1", "f1"),    // a replay of b1
		withKey(r("b5", "o11"), "k1", "other"), // ErrIdempotencyMismatch
		keyed(r("b6", ids("m", 12)...)),
		r("b1", "o1", "o2", "o3"), // a retried call: b1 again
		r("b7", "x", "y", "x"),    // ErrDuplicateOrder
		r("b8", ids("big", 40)...),
		r("b9", "o12"),
	}
}

// testManyLikeSequential sends manyRequests to one pool with DispatchMany
// and to a twin pool one Dispatch at a time: the answers, the loads and
// every order must be the same.
func testManyLikeSequential(t *testing.T, s dispatch.Store, md dispatch.MultiDispatcher) {
	const loadsSpec = "A=0 B=2 C=5" // room for 45 - 7 = 38 with maxOrders 15
	for _, p := range []string{"many", "one"} {
		newPool(t, s, p, loadsSpec)
		for _, id := range []string{"A", "B", "C"} { // b8, 40 orders, does not fit
			putScale(t, s, p, id, dispatch.ScaleSpec{MaxOrders: ptr[int64](15)}, t0)
		}
	}
	reqs := manyRequests("many")
	got := md.DispatchMany(ctx, reqs)
	if len(got) != len(reqs) {
		t.Fatalf("DispatchMany: got %d results for %d requests", len(got), len(reqs))
	}
	for i, req := range reqs {
		req.Pool = "one"
		b, replayed, err := s.Dispatch(ctx, req)
		what := fmt.Sprintf("request %d (%s)", i, req.BatchID)
		if kind, want := errorKind(got[i].Err), errorKind(err); kind != want {
			t.Errorf("%s: DispatchMany error %v, Dispatch %v", what, got[i].Err, err)
		}
		if got[i].Replayed != replayed {
			t.Errorf("%s: DispatchMany replayed %v, Dispatch %v", what, got[i].Replayed, replayed)
		}
		wantString(t, what, strings.Replace(formatBatch(got[i].Batch), "pool=many", "pool=one", 1), formatBatch(b))
	}
	for i, want := range []string{"", "", "exists", "", "idempotency", "", "", "duplicate", "noeligible", ""} {
		if kind := errorKind(got[i].Err); kind != want {
			t.Errorf("request %d: got error %v (%q), want %q", i, got[i].Err, kind, want)
		}
	}
	if !got[3].Replayed || got[3].Batch.ID != "b1" {
		t.Errorf("request 3: got batch %q replayed %v, want b1 replayed", got[3].Batch.ID, got[3].Replayed)
	}
	wantString(t, "loads", loads(t, s, "many"), loads(t, s, "one"))
	for i, req := range reqs {
		for _, o := range req.Orders {
			a, aerr := s.GetOrder(ctx, "many", o.ID, t0)
			b, berr := s.GetOrder(ctx, "one", o.ID, t0)
			if errorKind(aerr) != errorKind(berr) || formatOrder(a) != formatOrder(b) {
				t.Errorf("order %s: many %s, %v; one %s, %v", o.ID, formatOrder(a), aerr, formatOrder(b), berr)
			}
			// (the keys as sent, a batch with keys among batches without)
			if got[i].Err == nil && a.BatchID == req.BatchID && a.Key != o.Key {
				t.Errorf("order %s of %s: key %q, sent %q", o.ID, req.BatchID, a.Key, o.Key)
			}
		}
	}
}

// testManyNoPool checks that every request of a call for a pool that does
// not exist fails with ErrPoolNotFound.
func testManyNoPool(t *testing.T, _ dispatch.Store, md dispatch.MultiDispatcher) {
	reqs := manyRequests("nowhere")[:3]
	for i, r := range md.DispatchMany(ctx, reqs) {
		wantErr(t, fmt.Sprintf("request %d", i), r.Err, dispatch.ErrPoolNotFound, "nowhere")
	}
}

// testManyRetention completes 300 orders, then sends three batches in one
// call after their retention: the call must remove at least as many expired
// orders as three separate calls would (a store that removes them in
// slices must not fall behind when calls carry several batches).
func testManyRetention(t *testing.T, s dispatch.Store, md dispatch.MultiDispatcher) {
	newPool(t, s, "p1", "A=0 B=0")
	old := ids("old", 300)
	for _, id := range old {
		mustDispatch(t, s, request("p1", "b-"+id, t0, id))
	}
	if _, n, err := complete(s, "p1", t0, old...); err != nil || n != len(old) {
		t.Fatalf("Complete: %d, %v", n, err)
	}
	later := at(2 * time.Hour)
	reqs := []dispatch.DispatchRequest{request("p1", "n1", later, "n1"), request("p1", "n2", later, "n2"), request("p1", "n3", later, "n3")}
	for i, r := range md.DispatchMany(ctx, reqs) {
		if r.Err != nil {
			t.Fatalf("DispatchMany batch %d: %v", i, r.Err)
		}
	}
	for _, id := range old {
		if o, err := s.GetOrder(ctx, "p1", id, t0); err == nil {
			// Read at t0, an expired order shows until a write removes
			// it: the sweep is what this checks.
			if o.CompletedAt.Add(time.Hour).Before(later) {
				t.Errorf("order %s expired at %s, still stored at %s", id, o.CompletedAt.Add(time.Hour), later)
				return
			}
		}
	}
}

// testCoalescedService drives a coalescing Service from 16 goroutines, each
// sending batches of 1 to 4 orders and now and then one twice with the
// same Idempotency-Key: every batch must be applied once, each replay must
// return its first batch, and the Scales must end at most 1 apart.
func testCoalescedService(t *testing.T, s dispatch.Store, _ dispatch.MultiDispatcher) {
	const workers, batches = 16, 30
	newPool(t, s, "p1", "A=0 B=0 C=0 D=0 E=0")
	var calls, coalesced atomic.Int64
	svc := dispatch.NewService(s, dispatch.Config{ObserveCoalesced: func(batches int) {
		calls.Add(1)
		coalesced.Add(int64(batches))
	}})
	var (
		got  = &assignments{orders: map[string]string{}}
		wg   sync.WaitGroup
		sent atomic.Int64
	)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for b := range batches {
				in := dispatch.DispatchInput{Pool: "p1", Orders: make([]dispatch.OrderInput, 1+rng.IntN(4))}
				for i := range in.Orders {
					in.Orders[i].ID = fmt.Sprintf("w%d-b%d-o%d", w, b, i)
				}
				if b%5 == 0 {
					in.IdempotencyKey, in.Fingerprint = fmt.Sprintf("w%d-b%d", w, b), "fp"
				}
				batch, replayed, err := svc.Dispatch(ctx, in)
				if err != nil || replayed {
					t.Errorf("Dispatch w%d b%d: replayed %v, %v", w, b, replayed, err)
					return
				}
				sent.Add(int64(len(in.Orders)))
				if in.IdempotencyKey != "" {
					again, replayed, err := svc.Dispatch(ctx, in)
					if err != nil || !replayed || formatBatch(again) != formatBatch(batch) {
						t.Errorf("replay w%d b%d: got %s replayed %v, %v; want %s", w, b, formatBatch(again), replayed, err, formatBatch(batch))
					}
				}
				got.add(t, batch)
			}
		})
	}
	wg.Wait()
	if int64(len(got.orders)) != sent.Load() {
		t.Errorf("orders: got %d assigned, sent %d", len(got.orders), sent.Load())
	}
	var total int64
	scales := allScales(t, s, "p1")
	for _, sc := range scales {
		total += sc.Outstanding
	}
	if total != sent.Load() {
		t.Errorf("outstanding: got %d, want %d", total, sent.Load())
	}
	if spread := scales[len(scales)-1].OrderCount() - scales[0].OrderCount(); spread > 1 {
		t.Errorf("spread: got %d (%s), want at most 1", spread, formatScales(scales))
	}
	t.Logf("%d batches (replays included) in %d coalesced calls", coalesced.Load(), calls.Load())
}

// errorKind names the dispatch sentinel in err ("" for nil).
func errorKind(err error) string {
	if err == nil {
		return ""
	}
	for _, k := range []struct {
		name string
		err  error
	}{
		{"exists", dispatch.ErrOrderExists}, {"idempotency", dispatch.ErrIdempotencyMismatch},
		{"duplicate", dispatch.ErrDuplicateOrder}, {"noeligible", dispatch.ErrNoEligibleScale},
		{"nopool", dispatch.ErrPoolNotFound}, {"empty", dispatch.ErrEmptyBatch},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other: " + strings.SplitN(err.Error(), ":", 2)[0]
}
