package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestBreakerWhileRedisHangs: while Redis takes commands and never answers,
// the first commands fail with timeouts, the next fail at once without
// being sent (ErrNotAnswering, a 503), and once Redis answers again a probe
// closes the breaker.
func TestBreakerWhileRedisHangs(t *testing.T) {
	defer redis.SetBreakerProbe(100 * time.Millisecond)()
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "")
	c, err := redis.NewClient(px.URL()+"?read_timeout=100ms", "single")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	mustPool(t, svc, "p", "A")

	px.HoldNext(1000) // every command from now on gets no answer
	// The first pings time out (each after go-redis's retries; a new
	// connection's handshake counts too), until the breaker opens.
	timeouts := 0
	for {
		err := st.Ping(ctx)
		if errors.Is(err, redis.ErrNotAnswering) {
			break
		}
		if !errors.Is(err, dispatch.ErrUnavailable) {
			t.Fatalf("ping %d while Redis hangs: %v, want unavailable", timeouts, err)
		}
		if timeouts++; timeouts > 3 {
			t.Fatalf("%d pings timed out, and the breaker is still closed", timeouts)
		}
	}
	if timeouts == 0 {
		t.Fatal("the breaker opened before any command timed out")
	}
	held := px.Dropped()
	if err := st.Ping(ctx); !errors.Is(err, redis.ErrNotAnswering) || !errors.Is(err, dispatch.ErrUnavailable) {
		t.Fatalf("ping after three timeouts: %v, want ErrNotAnswering (unavailable)", err)
	}
	// A dispatch held back is plainly unavailable: nothing was sent, so it
	// is not indeterminate (503 unavailable, not outcome-unknown).
	_, _, err = svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}})
	if _, ind := errors.AsType[*dispatch.IndeterminateError](err); !errors.Is(err, dispatch.ErrNotSent) || ind {
		t.Errorf("dispatch while the breaker is open: %v, want ErrNotSent and not indeterminate", err)
	}
	if px.Dropped() != held {
		t.Errorf("the breaker sent commands: %d replies held, want %d", px.Dropped(), held)
	}

	px.Heal()
	if !waitFor(5*time.Second, func() bool { return st.Ping(ctx) == nil }) {
		t.Fatalf("Redis answers again, the breaker stays open: %v", st.Ping(ctx))
	}
	for i := range 3 {
		if err := st.Ping(ctx); err != nil {
			t.Fatalf("ping %d after the probe: %v", i, err)
		}
	}
}
