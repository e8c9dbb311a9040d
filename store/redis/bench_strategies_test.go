package redis_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// BenchmarkStrategyOneOrder dispatches one order at a time with each
// strategy into a pool of 10 Scales and into one of 100,000 (10,000 for
// consistent-hash, whose ring then holds 10^6 points). waterfill, random,
// round-robin, power-of-two and consistent-hash must cost about the same in
// both; the others read every eligible Scale for each order.
func BenchmarkStrategyOneOrder(b *testing.B) {
	srv := redistest.Start(b)
	c, err := redis.NewClient(srv.URL()+"?read_timeout=5m", "single")
	if err != nil {
		b.Fatalf("NewClient: %v", err)
	}
	b.Cleanup(func() { _ = c.Close() })
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	ctx := context.Background()
	for _, st := range dispatch.Strategies {
		big := 100_000
		if kind(st) == balancing.Hashed {
			big = 10_000
		}
		for _, n := range []int{10, big} {
			b.Run(fmt.Sprintf("%s/scales=%d", st, n), func(b *testing.B) {
				pool := fmt.Sprintf("%s-%d", st, n)
				mustPool(b, svc, pool)
				registerEqualScales(b, c, pool, n)
				if _, _, err := svc.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &st}); err != nil {
					b.Fatalf("PutPool: %v", err)
				}
				for i := 0; b.Loop(); i++ {
					in := dispatch.DispatchInput{Pool: pool, Orders: []dispatch.OrderInput{{ID: fmt.Sprintf("o-%d", i)}}}
					if _, _, err := svc.Dispatch(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/order")
				if err := svc.DeletePool(ctx, pool); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
