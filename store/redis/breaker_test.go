package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestBreakerWhileRedisHangs: while Redis takes commands and never answers,
// the first commands fail with timeouts, the next fail at once without
// being sent (ErrNotAnswering, a 503), and once Redis answers again a probe
// closes the breaker.
func TestBreakerWhileRedisHangs(t *testing.T) {
	// No probe while the test checks that the open breaker holds commands
	// back (a slow step on a loaded machine must not let one through);
	// probes every 10 ms once Redis answers again.
	defer redis.SetBreakerProbe(time.Hour)()
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "")
	c := dialClient(t, px.URL()+"?read_timeout=100ms", "single")
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	// The pool is made through a client of its own, with go-redis's
	// default timeouts: on a loaded machine the first call (which loads
	// the library) can take longer than the 100 ms under test.
	mustPool(t, dispatch.NewService(redis.New(dialClient(t, srv.URL(), "single"), redis.Options{}), dispatch.Config{}), "p", "A")

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
	_, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}})
	if _, ind := errors.AsType[*dispatch.IndeterminateError](err); !errors.Is(err, dispatch.ErrNotSent) || ind {
		t.Errorf("dispatch while the breaker is open: %v, want ErrNotSent and not indeterminate", err)
	}
	if px.Dropped() != held {
		t.Errorf("the breaker sent commands: %d replies held, want %d", px.Dropped(), held)
	}

	redis.SetBreakerProbe(10 * time.Millisecond)
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

// TestBreakerClusterRetries: on a Cluster the breaker sits on each node's
// client, below the cluster client's retries and redirections. Dispatches
// into a pool whose primary hangs may be sent, time out and be held back
// on a later attempt: none of them may claim ErrNotSent and yet have been
// applied.
func TestBreakerClusterRetries(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	c := dialClient(t, redistest.ClusterURL(nodes)+"&read_timeout=200ms", "cluster")
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	ctx := context.Background()
	mustPool(t, svc, "p", "A")
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "warm"}}}); err != nil {
		t.Fatal(err)
	}
	primary, err := c.(*goredis.ClusterClient).MasterForKey(ctx, "dispatch:{pool:p}:meta")
	if err != nil {
		t.Fatal(err)
	}
	var hung *redistest.Server
	for _, n := range nodes {
		if n.Addr() == primary.Options().Addr {
			hung = n
		}
	}
	hung.Pause()
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: fmt.Sprint("o", i)}}})
		})
	}
	wg.Wait()
	hung.Resume()
	check := dialClient(t, redistest.ClusterURL(nodes), "cluster")
	reader := dispatch.NewService(redis.New(check, redis.Options{}), dispatch.Config{})
	for i, e := range errs {
		if e == nil || !errors.Is(e, dispatch.ErrNotSent) {
			continue
		}
		if _, err := reader.GetOrder(ctx, "p", fmt.Sprint("o", i)); err == nil {
			t.Errorf("dispatch o%d answered %v (not sent, a retry is safe), but it was applied", i, e)
		}
	}
}

// TestBreakerHeldBackIsCounted: a hook of WithHook sits above the breaker,
// so the commands it holds back count in dispatcher_redis_errors_total
// (code not_answering), as the timeouts before them do (code timeout).
func TestBreakerHeldBackIsCounted(t *testing.T) {
	defer redis.SetBreakerProbe(time.Hour)()
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "")
	reg := prometheus.NewRegistry()
	c, err := redis.NewClient(px.URL()+"?read_timeout=100ms", "single", redis.WithHook(redis.NewMetrics(reg).Hook()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st := redis.New(c, redis.Options{})
	ctx := context.Background()
	// The first ping makes the connection; on a loaded machine its
	// handshake can outlast the 100 ms under test, so it may be tried
	// twice more (fewer timeouts than open the breaker), and the counts
	// below are those of the pings after it.
	for try := 1; ; try++ {
		err := st.Ping(ctx)
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatal(err)
		}
	}
	before := gather(t, reg)
	px.HoldNext(1000)
	pings := 0
	for !errors.Is(st.Ping(ctx), redis.ErrNotAnswering) {
		if pings++; pings > 3 {
			t.Fatalf("%d pings timed out, and the breaker is still closed", pings)
		}
	}
	for range 4 {
		if err := st.Ping(ctx); !errors.Is(err, redis.ErrNotAnswering) {
			t.Fatalf("ping with the breaker open: %v, want ErrNotAnswering", err)
		}
	}
	got := gather(t, reg)
	count := func(code string) float64 {
		return got.value("dispatcher_redis_errors_total", "call", "ping", "code", code) -
			before.value("dispatcher_redis_errors_total", "call", "ping", "code", code)
	}
	if n := count("not_answering"); n != 5 {
		t.Errorf(`errors{call="ping",code="not_answering"}: got %v more, want 5`, n)
	}
	if n := count("timeout"); n != float64(pings) {
		t.Errorf(`errors{call="ping",code="timeout"}: got %v more, want %d`, n, pings)
	}
}
