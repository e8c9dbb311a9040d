package dispatch_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// TestRandomsDrawnWhereUsed: a dispatch draws Config.Rand's numbers, two
// per order, only in a pool whose strategy draws (balancing.Strategy.Random):
// the Service leaves the drawing to the store (DispatchRequest.Randoms),
// and the memory store asks only for those strategies.
func TestRandomsDrawnWhereUsed(t *testing.T) {
	ctx := context.Background()
	for _, sp := range balancing.Strategies() {
		var drawn atomic.Int64
		svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{
			Rand: func() uint64 { return uint64(drawn.Add(1)) * 7919 },
		})
		st := dispatch.Strategy(sp.Name)
		if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &st}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"A", "B", "C"} {
			if _, _, err := svc.PutScale(ctx, "p", id, dispatch.ScaleSpec{}); err != nil {
				t.Fatal(err)
			}
		}
		in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, 4)}
		if _, _, err := svc.Dispatch(ctx, in); err != nil {
			t.Fatalf("%s: %v", sp.Name, err)
		}
		want := int64(0)
		if sp.Random {
			want = 8
		}
		if got := drawn.Load(); got != want {
			t.Errorf("%s: %d numbers drawn for a batch of 4, want %d", sp.Name, got, want)
		}
	}
}
