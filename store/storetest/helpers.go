package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// t0 is the suite's epoch; every time is t0 plus whole seconds, which every
// store can represent exactly.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var ctx = context.Background()

func at(d time.Duration) time.Time { return t0.Add(d) }

func ptr[T any](v T) *T { return &v }

// newPool creates a pool at t0 with the Scales of loads ("S1=1 S2=5"):
// each registered with that orderCount.
func newPool(t testing.TB, s dispatch.Store, pool, loads string) {
	t.Helper()
	if _, _, err := s.PutPool(ctx, pool, dispatch.PoolSpec{}, t0); err != nil {
		t.Fatalf("PutPool %s: %v", pool, err)
	}
	for _, f := range strings.Fields(loads) {
		id, n, _ := strings.Cut(f, "=")
		count, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			t.Fatalf("bad load %q", f)
		}
		putScale(t, s, pool, id, dispatch.ScaleSpec{OrderCount: &count}, t0)
	}
}

func putScale(t testing.TB, s dispatch.Store, pool, compID string, spec dispatch.ScaleSpec, now time.Time) dispatch.Scale {
	t.Helper()
	sc, _, err := s.PutScale(ctx, pool, compID, spec, now)
	if err != nil {
		t.Fatalf("PutScale %s/%s: %v", pool, compID, err)
	}
	return sc
}

func getScale(t testing.TB, s dispatch.Store, pool, compID string) dispatch.Scale {
	t.Helper()
	sc, err := s.GetScale(ctx, pool, compID)
	if err != nil {
		t.Fatalf("GetScale %s/%s: %v", pool, compID, err)
	}
	return sc
}

// ids returns n order ids prefix1, prefix2, ….
func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

// request is a batch of the given orders, as the Service would send it.
func request(pool, batchID string, now time.Time, orderIDs ...string) dispatch.DispatchRequest {
	orders := make([]dispatch.OrderInput, len(orderIDs))
	for i, id := range orderIDs {
		orders[i] = dispatch.OrderInput{ID: id}
	}
	return dispatch.DispatchRequest{
		Pool:           pool,
		BatchID:        batchID,
		Orders:         orders,
		Now:            now,
		Rand:           make([]uint64, 2*len(orders)),
		IdempotencyTTL: dispatch.DefaultIdempotencyTTL,
		MaxCost:        dispatch.DefaultMaxCost,
	}
}

func mustDispatch(t testing.TB, s dispatch.Store, req dispatch.DispatchRequest) dispatch.Batch {
	t.Helper()
	b, replayed, err := s.Dispatch(ctx, req)
	if err != nil {
		t.Fatalf("Dispatch %s in %s: %v", req.BatchID, req.Pool, err)
	}
	if replayed {
		t.Fatalf("Dispatch %s in %s: got replayed, want a new batch", req.BatchID, req.Pool)
	}
	return b
}

// compIDs returns the Scales of a batch's assignments, space-separated.
func compIDs(b dispatch.Batch) string {
	out := make([]string, len(b.Assignments))
	for i, a := range b.Assignments {
		out[i] = a.CompID
	}
	return strings.Join(out, " ")
}

// loads returns the orderCounts of the pool's Scales in compId order:
// "S1=13 S2=14 S3=13".
func loads(t testing.TB, s dispatch.Store, pool string) string {
	t.Helper()
	scs := allScales(t, s, pool)
	slices.SortFunc(scs, func(a, b dispatch.Scale) int { return strings.Compare(a.CompID, b.CompID) })
	return formatScales(scs)
}

// eligibleLoads returns the loads of the pool's eligible Scales.
func eligibleLoads(t testing.TB, s dispatch.Store, pool string) []balancing.Load {
	t.Helper()
	var out []balancing.Load
	for _, sc := range allScales(t, s, pool) {
		if sc.Eligible() {
			out = append(out, balancing.Load{ID: sc.CompID, Count: sc.OrderCount()})
		}
	}
	return out
}

func allPools(t testing.TB, s dispatch.Store) []dispatch.Pool {
	t.Helper()
	var out []dispatch.Pool
	for cursor := ""; ; {
		page, next, err := s.ListPools(ctx, dispatch.Page{Cursor: cursor, Limit: dispatch.MaxLimit})
		if err != nil {
			t.Fatalf("ListPools: %v", err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		cursor = next
	}
}

func allScales(t testing.TB, s dispatch.Store, pool string) []dispatch.Scale {
	t.Helper()
	var out []dispatch.Scale
	for cursor := ""; ; {
		page, next, err := s.ListScales(ctx, pool, dispatch.Page{Cursor: cursor, Limit: dispatch.MaxLimit})
		if err != nil {
			t.Fatalf("ListScales %s: %v", pool, err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// getOrder reads an order at t0, before any record's time passes: what
// the store holds, removed or not by a sweep.
func getOrder(t testing.TB, s dispatch.Store, pool, orderID string) dispatch.Order {
	t.Helper()
	o, err := s.GetOrder(ctx, pool, orderID, t0)
	if err != nil {
		t.Fatalf("GetOrder %s/%s: %v", pool, orderID, err)
	}
	return o
}

// wantOrder checks an order's state, Scale and completion time.
func wantOrder(t testing.TB, s dispatch.Store, pool, orderID string, state dispatch.OrderState, completedAt time.Time) dispatch.Order {
	t.Helper()
	o := getOrder(t, s, pool, orderID)
	if o.State != state || !o.CompletedAt.Equal(completedAt) {
		t.Errorf("order %s: got state %s completed %s, want %s completed %s",
			orderID, o.State, formatTime(o.CompletedAt), state, formatTime(completedAt))
	}
	return o
}

// wantGone checks that the pool holds none of the orders, read at t0: that
// they are removed, not only past their time.
func wantGone(t testing.TB, s dispatch.Store, pool string, orderIDs ...string) {
	t.Helper()
	for _, id := range orderIDs {
		if o, err := s.GetOrder(ctx, pool, id, t0); !errors.Is(err, dispatch.ErrOrderNotFound) {
			t.Errorf("GetOrder %s: got %s, %v, want %v", id, formatOrder(o), err, dispatch.ErrOrderNotFound)
		}
	}
}

// wantErr checks that err is sentinel and, if names are given, that its
// message names each of them.
func wantErr(t testing.TB, what string, err, sentinel error, names ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got error %v, want %v", what, err, sentinel)
		return
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: got error %q, want it to name %q", what, err, n)
		}
	}
}

func wantString(t testing.TB, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %s, want %s", what, got, want)
	}
}
