package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// sent is store/memory that keeps the requests it is sent.
type sent struct {
	*memory.Store
	reqs []dispatch.DispatchRequest
}

func (s *sent) Dispatch(ctx context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	s.reqs = append(s.reqs, req)
	return s.Store.Dispatch(ctx, req)
}

// TestRequestsCheckedUnique: the Service refuses a repeated order id
// itself, sending nothing, and marks the requests it sends as checked
// (UniqueIDs), so that a store need not check them again; RepeatedOrder,
// which a store checks other requests with, finds the first repeated id
// as the Service does, with and without its map.
func TestRequestsCheckedUnique(t *testing.T) {
	ctx := context.Background()
	st := &sent{Store: memory.New(memory.Options{})}
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	svc := dispatch.NewService(st, dispatch.Config{NoCoalesce: true})
	for _, n := range []int{2, 40} {
		in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, n)}
		for i := range in.Orders {
			in.Orders[i].ID = fmt.Sprintf("o-%d-%d", n, i)
		}
		in.Orders[n-1].ID = in.Orders[0].ID
		if id, ok := dispatch.RepeatedOrder(in.Orders); !ok || id != in.Orders[0].ID {
			t.Errorf("%d orders: RepeatedOrder says %q, %v", n, id, ok)
		}
		if _, _, err := svc.Dispatch(ctx, in); !errors.Is(err, dispatch.ErrDuplicateOrder) {
			t.Errorf("%d orders, one repeated: got %v", n, err)
		}
		in.Orders[n-1].ID = fmt.Sprintf("last-%d", n)
		if id, ok := dispatch.RepeatedOrder(in.Orders); ok {
			t.Errorf("%d orders: RepeatedOrder says %q repeats", n, id)
		}
		if _, _, err := svc.Dispatch(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.reqs) != 2 {
		t.Fatalf("the store got %d requests, want the 2 without a repeated id", len(st.reqs))
	}
	for _, r := range st.reqs {
		if !r.UniqueIDs {
			t.Errorf("a request of %d orders is not marked UniqueIDs", len(r.Orders))
		}
	}
}

// TestInputOrdersLeftAlone: the orders of a request are the input's own
// when every order has an id, and a copy that takes the made ids when one
// has none: the caller's slice never changes.
func TestInputOrdersLeftAlone(t *testing.T) {
	ctx := context.Background()
	st := &sent{Store: memory.New(memory.Options{})}
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutScale(ctx, "p", "A", dispatch.ScaleSpec{}, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	made := 0
	svc := dispatch.NewService(st, dispatch.Config{NoCoalesce: true, NewID: func() string { made++; return fmt.Sprintf("new-%d", made) }})
	for _, n := range []int{3, 40} { // without and with the map of ids
		for _, empty := range [][]int{nil, {0}, {1, n - 1}, {n - 1}} {
			in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, n)}
			for i := range in.Orders {
				in.Orders[i] = dispatch.OrderInput{ID: fmt.Sprintf("o-%d-%d-%d", n, i, len(empty)*100+len(st.reqs)), Key: fmt.Sprint("k", i)}
			}
			for _, i := range empty {
				in.Orders[i].ID = ""
			}
			before := append([]dispatch.OrderInput(nil), in.Orders...)
			b, _, err := svc.Dispatch(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			req := st.reqs[len(st.reqs)-1]
			for i := range in.Orders {
				if in.Orders[i] != before[i] {
					t.Errorf("%d orders, %v without an id: the input's order %d became %+v", n, empty, i, in.Orders[i])
				}
				want := before[i]
				if want.ID == "" {
					want.ID = fmt.Sprintf("new-%d", made-len(empty)+slices.Index(empty, i)) // (the batch id is made last)
				}
				if req.Orders[i] != want || b.Assignments[i].OrderID != want.ID {
					t.Errorf("%d orders, %v without an id: order %d sent as %+v, answered %q, want %+v",
						n, empty, i, req.Orders[i], b.Assignments[i].OrderID, want)
				}
			}
			if shared := &req.Orders[0] == &in.Orders[0]; shared != (len(empty) == 0) {
				t.Errorf("%d orders, %v without an id: the request shares the input's orders: %v", n, empty, shared)
			}
		}
	}
}
