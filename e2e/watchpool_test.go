package e2e_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
)

// TestClientWatchPool reads a pool's stream through the client on each
// store: snapshots follow the batches, a deleted pool ends the stream with
// ErrPoolNotFound, and an unknown pool is the first error.
func TestClientWatchPool(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{tokens: true})
		admin := newClient(t, srv.url, client.WithToken(adminToken))
		c := newClient(t, srv.url, client.WithToken(clientToken))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.PutPool(ctx, "eu", client.PoolInput{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.PutScale(ctx, "eu", "S1", client.ScaleInput{}); err != nil {
			t.Fatal(err)
		}
		for _, err := range c.WatchPool(ctx, "nope", nil) {
			if !errors.Is(err, client.ErrPoolNotFound) {
				t.Errorf("watch of an unknown pool: got %v, want ErrPoolNotFound", err)
			}
		}
		n, sent := 0, false
		for snap, err := range c.WatchPool(ctx, "eu", &client.WatchOptions{Interval: 250 * time.Millisecond}) {
			n++
			if err != nil {
				if !errors.Is(err, client.ErrPoolNotFound) || !sent {
					t.Fatalf("event %d: %v", n, err)
				}
				break
			}
			if snap.Pool != "eu" || snap.ScaleCount != 1 || len(snap.Scales) != 1 || snap.At.IsZero() {
				t.Fatalf("snapshot %d: %+v", n, snap)
			}
			switch {
			case !sent:
				if _, err := c.Dispatch(ctx, "eu", client.BatchInput{Orders: []client.OrderInput{{ID: "a"}, {ID: "b"}}}, nil); err != nil {
					t.Fatal(err)
				}
				sent = true
			case snap.Counters.Dispatched == 2 && snap.Scales[0].Outstanding == 2:
				if err := admin.DeletePool(ctx, "eu"); err != nil {
					t.Fatal(err)
				}
			}
			if n > 40 {
				t.Fatal("40 snapshots without the batch or the end of the stream")
			}
		}
		if !sent {
			t.Error("no snapshot came")
		}
	})
}
