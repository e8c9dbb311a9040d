package redis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestLimiter: two Limiters on one Redis (two replicas) share a token's
// budget: a burst of 3 goes to whichever asks first, then the next
// request waits about one emission interval. Another token has its own
// budget; a Redis that is gone is ErrUnavailable.
func TestLimiter(t *testing.T) {
	srv := redistest.Start(t)
	a, b := redis.NewLimiter(newClient(t, srv)), redis.NewLimiter(newClient(t, srv))
	ctx := context.Background()
	for i, l := range []*redis.Limiter{a, b, a} {
		if wait, err := l.Allow(ctx, "t", 2, 3); err != nil || wait != 0 {
			t.Fatalf("request %d of the burst: wait %s, %v", i+1, wait, err)
		}
	}
	wait, err := b.Allow(ctx, "t", 2, 3)
	if err != nil || wait < 400*time.Millisecond || wait > 500*time.Millisecond {
		t.Errorf("the request after the burst at 2/s: wait %s, %v; want about 500ms", wait, err)
	}
	if wait, err := b.Allow(ctx, "other", 2, 3); err != nil || wait != 0 {
		t.Errorf("another token: wait %s, %v; want allowed", wait, err)
	}
	srv.Stop()
	if _, err := a.Allow(ctx, "t", 2, 3); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Redis gone: got %v, want ErrUnavailable", err)
	}
}

// BenchmarkLimiter is the cost of one Allow on a local redis-server (a
// script call: one round trip), beside a PING (the round trip alone), 8
// callers at once.
func BenchmarkLimiter(b *testing.B) {
	srv := redistest.Start(b)
	c := newClient(b, srv)
	l := redis.NewLimiter(c)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		call func() error
	}{
		{"ping", func() error { return c.Ping(ctx).Err() }},
		{"allow", func() error { _, err := l.Allow(ctx, "bench", 1e6, 1000); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var wg sync.WaitGroup
			n := b.N
			start := time.Now()
			work := make(chan struct{}, n)
			for range n {
				work <- struct{}{}
			}
			close(work)
			for range 8 {
				wg.Go(func() {
					for range work {
						if err := bc.call(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "calls/s")
		})
	}
}
