package dispatch_test

import (
	"context"
	"errors"
	"fmt"
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
