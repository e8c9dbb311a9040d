package e2e_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	dispatcher "github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// Tokens of the servers that the tests start with auth on.
const (
	adminToken  = "admin-token-0123456789"
	clientToken = "client-token-0123456789"
)

// server is a dispatcher served over real HTTP.
type server struct {
	url   string
	store dispatch.Store
}

// serverOptions changes newServer.
type serverOptions struct {
	tokens   bool // admin and client tokens configured
	maxBatch int
}

// stores are the stores every client test runs on: the embedded one and a
// real redis-server started for the test.
var stores = []struct {
	name string
	open func(testing.TB) dispatch.Store
}{
	{"memory", func(testing.TB) dispatch.Store { return memory.New(memory.Options{}) }},
	{"redis", func(t testing.TB) dispatch.Store { return redisStore(t, redis.Options{}) }},
}

// redisStore returns a Redis store with opts on a redis-server of its own.
func redisStore(t testing.TB, opts redis.Options) dispatch.Store {
	t.Helper()
	srv := redistest.Start(t)
	c, err := redis.NewClient(srv.URL(), "single")
	if err != nil {
		t.Fatalf("redis.NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	return redis.New(c, opts)
}

// eachStore runs f as a subtest on each store.
func eachStore(t *testing.T, f func(t *testing.T, open func(testing.TB) dispatch.Store)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { f(t, s.open) })
	}
}

// newServer serves store over HTTP until the test ends.
func newServer(t testing.TB, store dispatch.Store, o serverOptions) *server {
	t.Helper()
	if o.maxBatch == 0 {
		o.maxBatch = 1000
	}
	opts := api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Spec: dispatcher.OpenAPI}
	if o.tokens {
		opts.AdminTokens, opts.ClientTokens = []string{adminToken}, []string{clientToken}
	}
	h := api.New(dispatch.NewService(store, dispatch.Config{MaxBatch: o.maxBatch}), opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &server{url: srv.URL, store: store}
}

// newClient returns a client of url with opts.
func newClient(t testing.TB, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatalf("client.New(%q): %v", url, err)
	}
	return c
}
