package redis_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// BenchmarkDispatch dispatches batches into pools of 10 and 10,000 Scales
// and reports the cost per order, which should not grow with the pool.
func BenchmarkDispatch(b *testing.B) {
	for _, tc := range []struct{ scales, batch int }{{10, 1}, {10, 100}, {10_000, 1}, {10_000, 100}} {
		b.Run(fmt.Sprintf("scales=%d/batch=%d", tc.scales, tc.batch), func(b *testing.B) {
			srv := redistest.Start(b)
			svc := dispatch.NewService(redis.New(newClient(b, srv), redis.Options{}), dispatch.Config{})
			ids := make([]string, tc.scales)
			for i := range ids {
				ids[i] = fmt.Sprintf("scale-%05d", i)
			}
			mustPool(b, svc, "p")
			putScales(b, svc, "p", ids)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, tc.batch)}
				for j := range in.Orders {
					in.Orders[j].ID = fmt.Sprintf("o-%d-%d", i, j)
				}
				if _, _, err := svc.Dispatch(ctx, in); err != nil {
					b.Fatal(err)
				}
			}
			orders := float64(b.N * tc.batch)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/orders, "ns/order")
			b.ReportMetric(orders/b.Elapsed().Seconds(), "orders/s")
		})
	}
}
