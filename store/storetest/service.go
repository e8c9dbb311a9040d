package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// clock is a deterministic clock, ids and randomness for a Service.
type clock struct {
	now time.Time
	ids int
	rnd uint64
}

func (c *clock) service(s dispatch.Store) *dispatch.Service {
	return dispatch.NewService(s, dispatch.Config{
		Now:   func() time.Time { return c.now },
		NewID: func() string { c.ids++; return fmt.Sprintf("id-%03d", c.ids) },
		Rand:  func() uint64 { c.rnd++; return c.rnd },
	})
}

func testServiceDispatch(t *testing.T, s dispatch.Store) {
	c := &clock{now: t0}
	svc := c.service(s)
	if _, created, err := svc.PutPool(ctx, "p1", dispatch.PoolSpec{}); err != nil || !created {
		t.Fatalf("PutPool: got created %v, %v, want true, nil", created, err)
	}
	for id, n := range map[string]int64{"S1": 1, "S2": 5, "S3": 12} {
		if _, _, err := svc.PutScale(ctx, "p1", id, dispatch.ScaleSpec{OrderCount: &n}); err != nil {
			t.Fatalf("PutScale: %v", err)
		}
	}
	in := dispatch.DispatchInput{Pool: "p1", Orders: make([]dispatch.OrderInput, 22)}
	in.Orders[3].ID = "mine"
	dry := in
	dry.DryRun = true
	b, _, err := svc.Dispatch(ctx, dry)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	wantString(t, "dry run", compIDs(b)+" id="+b.ID, seedSequence+" id=")

	c.now = at(time.Second)
	in.IdempotencyKey, in.Fingerprint = "k1", "POST /v1/pools/p1/batches {…}"
	b, replayed, err := svc.Dispatch(ctx, in)
	if err != nil || replayed {
		t.Fatalf("Dispatch: got replayed %v, %v, want false, nil", replayed, err)
	}
	wantString(t, "assignments", compIDs(b), seedSequence)
	if b.Assignments[3].OrderID != "mine" || !strings.HasPrefix(b.Assignments[0].OrderID, "id-") {
		t.Errorf("order ids: got %s and %s, want generated ids and mine", b.Assignments[0].OrderID, b.Assignments[3].OrderID)
	}
	got, err := svc.GetBatch(ctx, "p1", b.ID)
	if err != nil {
		t.Fatalf("GetBatch: %v", err)
	}
	wantString(t, "GetBatch", formatBatch(got), formatBatch(b))

	// The client retries: same key, same request, new generated ids.
	before := Snapshot(t, s, "p1")
	c.now = at(time.Minute)
	again, replayed, err := svc.Dispatch(ctx, in)
	if err != nil || !replayed {
		t.Fatalf("retry: got replayed %v, %v, want true, nil", replayed, err)
	}
	wantString(t, "replay", formatBatch(again), formatBatch(b))
	CheckUnchanged(t, s, before)
	in.Fingerprint = "another body"
	_, _, err = svc.Dispatch(ctx, in)
	wantErr(t, "key reused", err, dispatch.ErrIdempotencyMismatch)

	tab, err := svc.Table(ctx, "p1")
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	wantString(t, "table", formatTable(tab), "[S1 S3 S2] [0 2 2147483647]")
}

func testServiceOrders(t *testing.T, s dispatch.Store) {
	c := &clock{now: t0}
	svc := c.service(s)
	if _, _, err := svc.PutPool(ctx, "p1", dispatch.PoolSpec{}); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	if _, _, err := svc.PutScale(ctx, "p1", "A", dispatch.ScaleSpec{}); err != nil {
		t.Fatalf("PutScale: %v", err)
	}
	orders := []dispatch.OrderInput{{ID: "o1", Key: "cust-9"}, {ID: "o2"}, {ID: "o3"}, {ID: "o4"}}
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p1", Orders: orders}); err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	c.now = at(time.Minute)
	o, err := svc.CompleteOrder(ctx, "p1", "o1", 120)
	if err != nil {
		t.Fatalf("CompleteOrder: %v", err)
	}
	wantString(t, "completed", formatOrder(o), formatOrder(dispatch.Order{ID: "o1", CompID: "A", BatchID: "id-001",
		Key: "cust-9", State: dispatch.Completed, AssignedAt: t0, CompletedAt: at(time.Minute)}))
	n, err := svc.Complete(ctx, "p1", []dispatch.Completion{{OrderID: "o1"}, {OrderID: "o2", DurationMs: 80}})
	if err != nil || n != 1 {
		t.Errorf("Complete: got %d, %v, want 1, nil", n, err)
	}
	if o, err := svc.CancelOrder(ctx, "p1", "o3"); err != nil || o.State != dispatch.Cancelled {
		t.Errorf("CancelOrder: got %s, %v, want cancelled", formatOrder(o), err)
	}
	_, err = svc.CancelOrder(ctx, "p1", "o1")
	wantErr(t, "CancelOrder of a completed order", err, dispatch.ErrOrderState)
	_, err = svc.CompleteOrder(ctx, "p1", "o3", 0)
	wantErr(t, "CompleteOrder of a cancelled order", err, dispatch.ErrOrderState)
	if got, err := svc.GetOrder(ctx, "p1", "o4"); err != nil || got.State != dispatch.Assigned {
		t.Errorf("GetOrder o4: got %s, %v, want assigned", formatOrder(got), err)
	}
	wantString(t, "loads", loads(t, s, "p1"), "A=1")
	if err := svc.DeleteScale(ctx, "p1", "A", false); err == nil {
		t.Errorf("DeleteScale of a busy Scale: got nil, want %v", dispatch.ErrScaleBusy)
	}
	if err := svc.DeletePool(ctx, "p1"); err != nil {
		t.Errorf("DeletePool: %v", err)
	}
}
