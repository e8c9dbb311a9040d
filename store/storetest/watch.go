package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// snapshot reads a pool with Store.Snapshot.
func snapshot(t testing.TB, s dispatch.Store, pool string, edge, buckets int) dispatch.Snapshot {
	t.Helper()
	snap, err := s.Snapshot(ctx, pool, edge, buckets)
	if err != nil {
		t.Fatalf("Snapshot %s: %v", pool, err)
	}
	return snap
}

// recordedCounters counts the orders the pool holds by state, read one by
// one: what the counters must say of a pool whose orders are all still
// held. Dispatched counts every order recorded, Moved adds up their moves.
// Failed is left zero: an order does not record the reports against it.
func recordedCounters(t testing.TB, s dispatch.Store, pool string, orderIDs []string) dispatch.Counters {
	t.Helper()
	var c dispatch.Counters
	for _, id := range orderIDs {
		o := getOrder(t, s, pool, id)
		c.Dispatched++
		c.Moved += o.Moves
		switch o.State {
		case dispatch.Completed:
			c.Completed++
		case dispatch.Cancelled:
			c.Cancelled++
		}
	}
	return c
}

// checkCounters compares the pool's counters with the orders it records
// and counted, the number of failure reports that counted against a Scale
// (as Fail answered them), and returns what it expected.
func checkCounters(t testing.TB, s dispatch.Store, pool string, orderIDs []string, counted int64) dispatch.Counters {
	t.Helper()
	want := recordedCounters(t, s, pool, orderIDs)
	want.Failed = counted
	if got := snapshot(t, s, pool, 500, 20).Counters; got != want {
		t.Errorf("counters of %s: got %+v, want %+v (the orders recorded, the reports counted)", pool, got, want)
	}
	return want
}

// testCounters changes a pool in every way that counts, retried calls and
// replays among them, and checks the counters against the orders the pool
// records.
func testCounters(t *testing.T, s dispatch.Store) {
	newPool(t, s, "c", "A=0 B=0 C=0")
	if got := snapshot(t, s, "c", 500, 20).Counters; got != (dispatch.Counters{}) {
		t.Errorf("counters of a new pool: got %+v, want zeros", got)
	}
	b1 := request("c", "b1", at(time.Second), "o1", "o2", "o3")
	b1.IdempotencyKey, b1.Fingerprint = "k1", "f1"
	mustDispatch(t, s, b1)
	// A call retried with its batch id, a replay of its key, a dry run and
	// a refused batch count nothing.
	if _, _, err := s.Dispatch(ctx, b1); err != nil {
		t.Fatalf("retried b1: %v", err)
	}
	replay := request("c", "b1x", at(2*time.Second), "p1")
	replay.IdempotencyKey, replay.Fingerprint = "k1", "f1"
	if _, replayed, err := s.Dispatch(ctx, replay); err != nil || !replayed {
		t.Fatalf("replay of k1: got replayed %v, %v; want a replay", replayed, err)
	}
	dry := request("c", "", at(2*time.Second), "d1", "d2")
	dry.DryRun = true
	if _, _, err := s.Dispatch(ctx, dry); err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if _, _, err := s.Dispatch(ctx, request("c", "b2x", at(2*time.Second), "o9", "o1")); err == nil {
		t.Fatal("a batch with a held order: got nil, want ErrOrderExists")
	}
	mustDispatch(t, s, request("c", "b2", at(3*time.Second), ids("q", 9)...))
	all := append([]string{"o1", "o2", "o3"}, ids("q", 9)...)

	complete := func(ids ...string) {
		t.Helper()
		cs := make([]dispatch.Completion, len(ids))
		for i, id := range ids {
			cs[i] = dispatch.Completion{OrderID: id}
		}
		if _, _, err := s.Complete(ctx, "c", cs, at(4*time.Second)); err != nil {
			t.Fatalf("Complete %v: %v", ids, err)
		}
	}
	complete("o1")
	complete("o1", "o2") // o1 again: counted once
	for range 2 {
		if _, err := s.Cancel(ctx, "c", "q1", at(4*time.Second)); err != nil {
			t.Fatalf("Cancel q1: %v", err)
		}
	}
	if _, _, err := s.Complete(ctx, "c", []dispatch.Completion{{OrderID: "q2"}, {OrderID: "q1"}}, at(4*time.Second)); err == nil {
		t.Fatal("completing a cancelled order: got nil, want ErrOrderState")
	}

	// B goes down and its orders move; C is deleted with its orders.
	putScale(t, s, "c", "B", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, at(5*time.Second))
	held := getScale(t, s, "c", "B").Outstanding
	moves, err := s.Reassign(ctx, dispatch.ReassignRequest{Pool: "c", CompID: "B", Now: at(5 * time.Second),
		Rand: make([]uint64, 2*held), MaxCost: dispatch.DefaultMaxCost})
	if err != nil || int64(len(moves)) != held || held == 0 {
		t.Fatalf("Reassign B: got %d moves, %v; want %d (> 0)", len(moves), err, held)
	}
	if err := s.DeleteScale(ctx, "c", "C", true, at(6*time.Second)); err != nil {
		t.Fatalf("DeleteScale C: %v", err)
	}

	want := recordedCounters(t, s, "c", all)
	if want.Moved != int64(len(moves)) {
		t.Errorf("moves recorded on the orders: got %d, want %d (Reassign's answer)", want.Moved, len(moves))
	}
	if want.Cancelled < 2 || want.Completed != 2 {
		t.Fatalf("the test needs forced cancellations: recorded %+v", want)
	}
	snap := snapshot(t, s, "c", 500, 20)
	if snap.Counters != want {
		t.Errorf("counters: got %+v, want %+v (the orders recorded)", snap.Counters, want)
	}
	// Counters are the pool's: another pool's start at zero, and a pool
	// deleted and created again starts afresh.
	if err := s.DeletePool(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	newPool(t, s, "c", "A=0")
	if got := snapshot(t, s, "c", 500, 20).Counters; got != (dispatch.Counters{}) {
		t.Errorf("counters of a pool created again: got %+v, want zeros", got)
	}
}

// testSnapshot checks a pool small enough to show whole: the pool as
// GetPool shows it, every Scale as ListScales lists them, no histogram.
func testSnapshot(t *testing.T, s dispatch.Store) {
	if _, err := s.Snapshot(ctx, "nope", 500, 20); err == nil {
		t.Error("Snapshot of an unknown pool: got nil, want ErrPoolNotFound")
	} else {
		wantErr(t, "Snapshot nope", err, dispatch.ErrPoolNotFound, "nope")
	}
	newPool(t, s, "w", "")
	if snap := snapshot(t, s, "w", 3, 4); len(snap.Scales) != 0 || snap.Histogram != nil || snap.Pool.ScaleCount != 0 {
		t.Errorf("an empty pool: got %+v, want no Scales and no histogram", snap)
	}
	putScale(t, s, "w", "S1", dispatch.ScaleSpec{OrderCount: ptr[int64](4)}, t0)
	putScale(t, s, "w", "S2", dispatch.ScaleSpec{OrderCount: ptr[int64](1), State: ptr(dispatch.Draining)}, t0)
	putScale(t, s, "w", "S3", dispatch.ScaleSpec{MaxOrders: ptr[int64](2)}, t0)
	putScale(t, s, "w", "S4", dispatch.ScaleSpec{Weight: ptr[int64](7)}, t0)
	mustDispatch(t, s, request("w", "b1", at(time.Second), ids("o", 5)...))
	snap := snapshot(t, s, "w", 3, 4)
	pool, err := s.GetPool(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Pool != pool {
		t.Errorf("pool: got %+v, want %+v", snap.Pool, pool)
	}
	if want := allScales(t, s, "w"); !reflect.DeepEqual(snap.Scales, want) {
		t.Errorf("scales: got %s, want every Scale as listed: %s", formatScales(snap.Scales), formatScales(want))
	}
	if snap.Histogram != nil {
		t.Errorf("histogram of a pool shown whole: got %+v, want none", snap.Histogram)
	}
	if snap.Counters.Dispatched != 5 {
		t.Errorf("dispatched: got %d, want 5", snap.Counters.Dispatched)
	}
}

// testSnapshotLarge checks a pool beyond 2 × edge Scales, some of them not
// eligible: the edge lowest and highest as ListScales lists them, and a
// histogram of every Scale.
func testSnapshotLarge(t *testing.T, s dispatch.Store) {
	const edge, buckets, n = 4, 5, 23
	newPool(t, s, "big", "")
	for i := range n {
		spec := dispatch.ScaleSpec{OrderCount: ptr(int64(i * i % 37))}
		switch i % 5 {
		case 1:
			spec.State = ptr(dispatch.Down)
		case 2:
			spec.MaxOrders = ptr(int64(i*i%37 + 1))
		}
		putScale(t, s, "big", fmt.Sprintf("S%02d", i), spec, t0)
	}
	mustDispatch(t, s, request("big", "b1", at(time.Second), ids("o", 30)...))
	all := allScales(t, s, "big")
	snap := snapshot(t, s, "big", edge, buckets)
	want := slices.Concat(all[:edge], all[n-edge:])
	if !reflect.DeepEqual(snap.Scales, want) {
		t.Errorf("scales: got %s, want the %d lowest and highest: %s", formatScales(snap.Scales), edge, formatScales(want))
	}
	lo, hi := all[0].OrderCount(), all[n-1].OrderCount()
	h := dispatch.Histogram{Min: lo, Width: dispatch.HistogramWidth(lo, hi, buckets), Counts: make([]int64, buckets)}
	for _, sc := range all {
		h.Counts[(sc.OrderCount()-lo)/h.Width]++
	}
	if snap.Histogram == nil || !reflect.DeepEqual(*snap.Histogram, h) {
		t.Errorf("histogram: got %+v, want %+v", snap.Histogram, h)
	}
	if snap.Pool.ScaleCount != n {
		t.Errorf("scaleCount: got %d, want %d", snap.Pool.ScaleCount, n)
	}
}

// testManyCounters sends manyRequests with DispatchMany: the counters
// count each batch recorded once, the retried and replayed ones not again.
func testManyCounters(t *testing.T, s dispatch.Store, md dispatch.MultiDispatcher) {
	newPool(t, s, "m", "A=0 B=0 C=0 D=5")
	var orders []string
	seen := map[string]bool{}
	for _, res := range md.DispatchMany(ctx, manyRequests("m")) {
		if res.Err != nil || res.Replayed || seen[res.Batch.ID] {
			continue
		}
		seen[res.Batch.ID] = true
		for _, a := range res.Batch.Assignments {
			orders = append(orders, a.OrderID)
		}
	}
	want := recordedCounters(t, s, "m", orders)
	if want.Dispatched < 10 {
		t.Fatalf("the test needs batches recorded: %d orders", want.Dispatched)
	}
	if got := snapshot(t, s, "m", 500, 20).Counters; got != want {
		t.Errorf("counters: got %+v, want %+v (the orders recorded)", got, want)
	}
}
