package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestReassignOwnIndex reassigns a down Scale's orders, which span several
// chunks with holes, and checks that the own index follows them: each
// Scale's index lists exactly its assigned orders, the listing finds them
// oldest first, and a force delete of the receiving Scale cancels them.
func TestReassignOwnIndex(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	mustPool(t, svc, "p", "A", "B")
	var ids []string
	for b := range 5 {
		in := dispatch.DispatchInput{Pool: "p"}
		for j := range 60 {
			id := fmt.Sprintf("o%d-%d", b, j)
			in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
			ids = append(ids, id)
		}
		if _, _, err := svc.Dispatch(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		if i < 70 || i%5 == 0 {
			if _, err := svc.CompleteOrder(ctx, "p", id, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	down := dispatch.Down
	if _, _, err := svc.PutScale(ctx, "p", "A", dispatch.ScaleSpec{State: &down}); err != nil {
		t.Fatal(err)
	}
	a, _ := st.GetScale(ctx, "p", "A")
	b, _ := st.GetScale(ctx, "p", "B")
	moves, err := svc.Reassign(ctx, "p", "A")
	if err != nil {
		t.Fatalf("Reassign: %v", err)
	}
	if int64(len(moves)) != a.Outstanding || a.Outstanding == 0 {
		t.Fatalf("moved %d orders, A had %d", len(moves), a.Outstanding)
	}
	checkOwnIndex(t, c, st, "p")
	listed, _, err := svc.ListScaleOrders(ctx, "p", "B", dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(listed)) != b.Outstanding+a.Outstanding {
		t.Fatalf("B lists %d orders, want %d", len(listed), b.Outstanding+a.Outstanding)
	}
	for i, m := range moves {
		if got := listed[int(b.Outstanding)+i].ID; got != m.OrderID {
			t.Fatalf("B's order %d is %s, want the moved %s", int(b.Outstanding)+i, got, m.OrderID)
		}
	}
	if err := svc.DeleteScale(ctx, "p", "B", true); err != nil {
		t.Fatal(err)
	}
	for _, m := range moves {
		if o, err := st.GetOrder(ctx, "p", m.OrderID, time.Now()); err != nil || o.State != dispatch.Cancelled {
			t.Fatalf("order %s after force delete: %+v, %v", m.OrderID, o, err)
		}
	}
	checkOwnIndex(t, c, st, "p")
}
