package dispatch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// instant is a MultiDispatcher that answers every batch at once
// (storetest.Instant), also several in one call.
type instant struct{ storetest.Instant }

func (s instant) DispatchMany(ctx context.Context, reqs []dispatch.DispatchRequest) []dispatch.DispatchResult {
	out := make([]dispatch.DispatchResult, len(reqs))
	for i, r := range reqs {
		out[i].Batch, out[i].Replayed, out[i].Err = s.Dispatch(ctx, r)
	}
	return out
}

// BenchmarkCoalescedDispatch sends single-order batches of one pool from
// 16 goroutines through a coalescing Service over a store that answers at
// once: the Service's and the coalescer's own work per batch (the
// hand-offs between goroutines included), without a network.
func BenchmarkCoalescedDispatch(b *testing.B) {
	svc := dispatch.NewService(instant{}, dispatch.Config{})
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		for pb.Next() {
			in := dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: fmt.Sprint("o-", n.Add(1))}}}
			if _, _, err := svc.Dispatch(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkServiceDispatch sends batches of 1, 100 and 1,000 orders, each
// with its id (the same ids every time: the store keeps nothing), through a Service that does not coalesce, over a store that
// answers at once: the checks, ids and random numbers of a batch.
func BenchmarkServiceDispatch(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			svc := dispatch.NewService(instant{}, dispatch.Config{NoCoalesce: true})
			in := dispatch.DispatchInput{Pool: "p", Orders: orders("o", n)}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := svc.Dispatch(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
