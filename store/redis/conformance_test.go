package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// TestConformance runs the conformance suite of dispatch.Store, each subtest
// on a fresh redis-server.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t testing.TB, opts storetest.Options) dispatch.Store {
		return newStore(t, redistest.Start(t), redis.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
	})
}

// The Redis store coalesces: a Service over it shares script calls.
var _ dispatch.MultiDispatcher = (*redis.Store)(nil)

// TestConformanceMulti runs the tests of DispatchMany, each on a fresh
// redis-server.
func TestConformanceMulti(t *testing.T) {
	storetest.RunMulti(t, func(t testing.TB, opts storetest.Options) dispatch.Store {
		return newStore(t, redistest.Start(t), redis.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
	})
}

// dialClient returns a client of NewClient for url in mode, closed by
// t.Cleanup.
func dialClient(t testing.TB, url, mode string) goredis.UniversalClient {
	t.Helper()
	c, err := redis.NewClient(url, mode)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newStore returns a Store on srv through a client of NewClient, closed by
// t.Cleanup.
func newStore(t testing.TB, srv *redistest.Server, opts redis.Options) *redis.Store {
	t.Helper()
	return redis.New(newClient(t, srv), opts)
}

func newClient(t testing.TB, srv *redistest.Server) goredis.UniversalClient {
	t.Helper()
	c := dialClient(t, srv.URL(), "single")
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	return c
}
