package e2e_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
)

// TestReadsPastRetentionAre404 checks over HTTP, on both stores, that a
// completed order reads as gone (404) once its retention has passed,
// though no write came since to sweep it.
func TestReadsPastRetentionAre404(t *testing.T) {
	const retention = time.Second
	for _, s := range []struct {
		name string
		open func(testing.TB) dispatch.Store
	}{
		{"memory", func(testing.TB) dispatch.Store { return memory.New(memory.Options{Retention: retention}) }},
		{"redis", func(t testing.TB) dispatch.Store { return redisStore(t, redis.Options{Retention: retention}) }},
	} {
		t.Run(s.name, func(t *testing.T) {
			srv := newServer(t, s.open(t), serverOptions{})
			c := newClient(t, srv.url)
			ctx := context.Background()
			if _, err := c.PutPool(ctx, "eu", client.PoolInput{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PutScale(ctx, "eu", "S1", client.ScaleInput{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Dispatch(ctx, "eu", client.BatchInput{Orders: []client.OrderInput{{ID: "o-1"}, {ID: "o-2"}}}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CompleteOrder(ctx, "eu", "o-1", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetOrder(ctx, "eu", "o-1"); err != nil {
				t.Fatalf("GetOrder within the retention: %v", err)
			}
			time.Sleep(retention + 200*time.Millisecond)
			if _, err := c.GetOrder(ctx, "eu", "o-1"); !errors.Is(err, client.ErrOrderNotFound) {
				t.Errorf("GetOrder of a completed order past its retention: %v, want 404 order-not-found", err)
			}
			if o, err := c.GetOrder(ctx, "eu", "o-2"); err != nil || o.State != client.OrderAssigned {
				t.Errorf("GetOrder of an assigned order: %+v, %v; want it, assigned orders never expire", o, err)
			}
		})
	}
}
