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
	wantString(t, "batch", formatBatch(mustDispatch(t, s, req)), want)
	b, replayed, err := s.Dispatch(ctx, req)
	if err != nil || replayed {
		t.Fatalf("re-sent batch: got replayed %v, %v, want the batch", replayed, err)
	}
	wantString(t, "re-sent batch", formatBatch(b), want)
	wantString(t, "loads after a re-send", loads(t, s, "p1"), "A=1 B=5")

	other := request("p1", otherID, at(time.Second), "o:1")
	_, _, err = s.Dispatch(ctx, other)
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
	touch(t, s, "p1", at(time.Hour))
	b, err = s.GetBatch(ctx, "p1", id, at(time.Hour))
	if err != nil {
		t.Fatalf("GetBatch at the end of its window: %v", err)
	}
	wantString(t, "batch at the end of its window", formatBatch(b), want)

	touch(t, s, "p1", at(time.Hour+time.Millisecond))
	_, err = s.GetBatch(ctx, "p1", id, at(time.Hour+time.Millisecond))
	wantErr(t, "GetBatch after its window", err, dispatch.ErrBatchNotFound)
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
