package storetest

import (
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// testNamedBatches runs with a retention of 1h on batches of one order
// with ids of the form the Redis store gives them (dispatch.BatchNamer):
// the order id, ':' and 12 hexadecimal digits, a form the Redis store
// keeps in the order's record. Such a batch reads back as first answered
// for its whole window, also after its order moved and finished; a
// re-sent request finds it; another request for its order id fails as
// ErrOrderExists and names no batch; an id of that form that no batch has
// is not found; once the window has passed the batch is not found, and
// once the order has left its id takes another batch.
func testNamedBatches(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=5")
	const id, otherID = "o:1:0123456789ab", "o:1:ba9876543210"
	req := request("p1", id, t0, "o:1")
	want := `batch "o:1:0123456789ab" pool=p1 strategy=waterfill created=2025-03-01T12:00:00Z [o:1:A]`
	dispatchResent(t, s, req, want, "A=1 B=5")

	other := request("p1", otherID, at(time.Second), "o:1")
	_, _, err := s.Dispatch(ctx, other)
	wantErr(t, "another batch of the order", err, dispatch.ErrOrderExists, "o:1")
	for _, bid := range []string{otherID, "o:1:0123456789ac", "o:2:0123456789ab", "o:0123456789ab"} {
		_, err := s.GetBatch(ctx, "p1", bid, at(time.Second))
		wantErr(t, "GetBatch "+bid, err, dispatch.ErrBatchNotFound)
	}

	// The order moves to B and completes; its batch shows A.
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{State: ptr(dispatch.Down)}, at(time.Minute))
	if _, err := s.Reassign(ctx, dispatch.ReassignRequest{Pool: "p1", CompID: "A", Now: at(time.Minute),
		Rand: make([]uint64, 2), MaxCost: dispatch.DefaultMaxCost}); err != nil {
		t.Fatalf("Reassign: %v", err)
	}
	if _, _, err := complete(s, "p1", at(2*time.Minute), "o:1"); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantString(t, "order", formatOrder(getOrder(t, s, "p1", "o:1")),
		`o:1 comp=B batch=o:1:0123456789ab key="" state=completed assigned=2025-03-01T12:00:00Z completed=2025-03-01T12:02:00Z moves=1`)
	checkHourWindow(t, s, id, want)
	if o, err := s.GetOrder(ctx, "p1", "o:1", at(time.Hour+time.Millisecond)); err != nil || o.State != dispatch.Completed {
		t.Errorf("order after its batch's window: got %s, %v, want it completed", formatOrder(o), err)
	}

	later := at(time.Hour + 2*time.Minute + time.Second)
	touch(t, s, "p1", later)
	wantGone(t, s, "p1", "o:1")
	other.Now = later
	wantString(t, "the order id's next batch", formatBatch(mustDispatch(t, s, other)),
		`batch "o:1:ba9876543210" pool=p1 strategy=waterfill created=2025-03-01T13:02:01Z [o:1:B]`)
	_, err = s.GetBatch(ctx, "p1", id, later)
	wantErr(t, "GetBatch of the order id's first batch", err, dispatch.ErrBatchNotFound)
}

// testNamedBatchOfSeveral runs with a retention of 1h on a batch of three
// orders named after its first, as the Redis store names such a batch:
// it reads back for its window and is found by a re-sent request; another
// request that holds one of its orders fails as ErrOrderExists; after
// its window, while some of its orders stay, they still name it and its
// time; once its first order has left, that id takes another batch.
func testNamedBatchOfSeveral(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=0")
	const id = "m1:00000000000a"
	req := request("p1", id, t0, "m1", "m2", "m3")
	want := `batch "m1:00000000000a" pool=p1 strategy=waterfill created=2025-03-01T12:00:00Z [m1:B m2:A m3:B]`
	dispatchResent(t, s, req, want, "A=1 B=2")
	for _, other := range []dispatch.DispatchRequest{
		request("p1", "m1:00000000000b", t0, "m1", "m4"),
		request("p1", "m4:00000000000a", t0, "m4", "m2"),
	} {
		_, _, err := s.Dispatch(ctx, other)
		wantErr(t, "another batch of an order of "+id, err, dispatch.ErrOrderExists)
		_, err = s.GetBatch(ctx, "p1", other.BatchID, t0)
		wantErr(t, "GetBatch "+other.BatchID, err, dispatch.ErrBatchNotFound)
	}
	wantString(t, "order m3", formatOrder(getOrder(t, s, "p1", "m3")),
		`m3 comp=B batch=m1:00000000000a key="" state=assigned assigned=2025-03-01T12:00:00Z completed=- moves=0`)

	if _, _, err := complete(s, "p1", at(time.Minute), "m1"); err != nil {
		t.Fatalf("Complete m1: %v", err)
	}
	if _, _, err := complete(s, "p1", at(2*time.Minute), "m2"); err != nil {
		t.Fatalf("Complete m2: %v", err)
	}
	checkHourWindow(t, s, id, want)

	later := at(time.Hour + time.Minute + time.Second)
	touch(t, s, "p1", later)
	wantGone(t, s, "p1", "m1")
	wantString(t, "order m3 after its batch's first order left", formatOrder(getOrder(t, s, "p1", "m3")),
		`m3 comp=B batch=m1:00000000000a key="" state=assigned assigned=2025-03-01T12:00:00Z completed=- moves=0`)
	next := request("p1", "m1:00000000000b", later, "m1")
	wantString(t, "the first order id's next batch", formatBatch(mustDispatch(t, s, next)),
		`batch "m1:00000000000b" pool=p1 strategy=waterfill created=2025-03-01T13:01:01Z [m1:A]`)
	_, err := s.GetBatch(ctx, "p1", id, later)
	wantErr(t, "GetBatch of the first order id's first batch", err, dispatch.ErrBatchNotFound)

	touch(t, s, "p1", at(time.Hour+2*time.Minute+time.Second))
	wantGone(t, s, "p1", "m2")
	if _, err := s.Cancel(ctx, "p1", "m3", at(time.Hour+3*time.Minute)); err != nil {
		t.Fatalf("Cancel m3: %v", err)
	}
	touch(t, s, "p1", at(2*time.Hour+3*time.Minute+time.Second))
	wantGone(t, s, "p1", "m3")
}

// checkHourWindow checks that batch id of pool p1, made at t0 with a
// retention of 1h, reads back as want at the last millisecond of its
// window and is not found one millisecond later.
func checkHourWindow(t *testing.T, s dispatch.Store, id, want string) {
	t.Helper()
	touch(t, s, "p1", at(time.Hour))
	b, err := s.GetBatch(ctx, "p1", id, at(time.Hour))
	if err != nil {
		t.Fatalf("GetBatch at the end of its window: %v", err)
	}
	wantString(t, "batch at the end of its window", formatBatch(b), want)
	touch(t, s, "p1", at(time.Hour+time.Millisecond))
	_, err = s.GetBatch(ctx, "p1", id, at(time.Hour+time.Millisecond))
	wantErr(t, "GetBatch after its window", err, dispatch.ErrBatchNotFound)
}

// dispatchResent dispatches req to pool p1, which must answer want, sends
// it again as a re-sent call would, which must answer the same batch, not
// replayed, and checks the Scales' loads then: wantLoads, counted once.
func dispatchResent(t *testing.T, s dispatch.Store, req dispatch.DispatchRequest, want, wantLoads string) {
	t.Helper()
	wantString(t, "batch", formatBatch(mustDispatch(t, s, req)), want)
	b, replayed, err := s.Dispatch(ctx, req)
	if err != nil || replayed {
		t.Fatalf("re-sent batch: got replayed %v, %v, want the batch", replayed, err)
	}
	wantString(t, "re-sent batch", formatBatch(b), want)
	wantString(t, "loads after a re-send", loads(t, s, "p1"), wantLoads)
}
