package e2e_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	dispatcher "github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// TestClientTenancy: through the Go client, a scoped token sees its pools
// only (a hidden one is client.ErrPoolNotFound, and the list leaves it
// out), and a token over its rate gets through because the client waits
// out the 429's Retry-After; without retries the caller sees
// client.ErrRateLimited.
func TestClientTenancy(t *testing.T) {
	const euToken, meteredToken = "eu-token-0123456789", "metered-token-0123456789"
	set, err := api.NewTokenSet([]api.Token{
		{Name: "eu", SHA256: sha256.Sum256([]byte(euToken)), Role: api.RoleClient, Pools: []string{"eu-*"}},
		{Name: "metered", SHA256: sha256.Sum256([]byte(meteredToken)), Role: api.RoleClient, Pools: []string{"eu-*"}, RatePerSec: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := api.New(dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{}), api.Options{
		AdminTokens: []string{adminToken}, Tokens: set,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Spec: dispatcher.OpenAPI,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	admin := newClient(t, srv.URL, client.WithToken(adminToken))
	for _, p := range []string{"eu-1", "us-1"} {
		if _, err := admin.PutPool(ctx, p, client.PoolInput{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.PutScale(ctx, p, "S1", client.ScaleInput{}); err != nil {
			t.Fatal(err)
		}
	}

	eu := newClient(t, srv.URL, client.WithToken(euToken))
	if _, err := eu.GetPool(ctx, "us-1"); !errors.Is(err, client.ErrPoolNotFound) {
		t.Errorf("a hidden pool: got %v, want ErrPoolNotFound", err)
	}
	var names []string
	for p, err := range eu.ListPools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	if fmt.Sprint(names) != "[eu-1]" {
		t.Errorf("the scoped list: %v, want [eu-1]", names)
	}

	// 2/s with a burst of 1: the second and third dispatch wait for their
	// 429's Retry-After (1 s) and go through.
	metered := newClient(t, srv.URL, client.WithToken(meteredToken))
	start := time.Now()
	for i := range 3 {
		in := client.BatchInput{Orders: []client.OrderInput{{ID: fmt.Sprintf("o-%d", i)}}}
		if _, err := metered.Dispatch(ctx, "eu-1", in, nil); err != nil {
			t.Fatalf("dispatch %d: %v", i, err)
		}
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("3 dispatches at 2/s took %s: the client did not wait for the 429s", took)
	}
	once := newClient(t, srv.URL, client.WithToken(meteredToken), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	_, err = once.GetPool(ctx, "eu-1")
	_, err2 := once.GetPool(ctx, "eu-1")
	if !errors.Is(err, client.ErrRateLimited) && !errors.Is(err2, client.ErrRateLimited) {
		t.Errorf("two reads at once over 2/s without retries: got %v, %v; want ErrRateLimited", err, err2)
	}
}
