package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// ringStep is store/redis's Scales per ring_build call.
const ringStep = 50

// TestRingBuiltInSteps switches a pool of 300 Scales to consistent-hash:
// no script call may place more than ringStep Scales' points, and the ring
// must be the one a pool that hashed from the start grew as its Scales
// registered, so that both send every key to the same Scale.
func TestRingBuiltInSteps(t *testing.T) {
	srv, c, svc := ringEnv(t)
	ctx := context.Background()
	ids := numbered("scale-", 300)
	mustPool(t, svc, "steps")
	hash := dispatch.ConsistentHash
	if _, _, err := svc.PutPool(ctx, "grown", dispatch.PoolSpec{Strategy: &hash}); err != nil {
		t.Fatal(err)
	}
	putScales(t, svc, "steps", ids)
	putScales(t, svc, "grown", ids)

	groups := scriptGroups(t, c, srv.Addr(), func() {
		if _, _, err := svc.PutPool(ctx, "steps", dispatch.PoolSpec{Strategy: &hash}); err != nil {
			t.Fatal(err)
		}
	})
	builds := 0
	for _, g := range groups {
		placed := 0
		for _, call := range g {
			if call[0] == "ZADD" && call[1] == poolKey("steps", "ring") {
				placed += (len(call) - 2) / 2
			}
		}
		if placed > ringStep*100 {
			t.Errorf("one script call placed %d ring points, want at most %d", placed, ringStep*100)
		}
		if placed > 0 {
			builds++
		}
	}
	if want := len(ids) / ringStep; builds < want {
		t.Errorf("ring built in %d calls, want at least %d", builds, want)
	}
	if a, b := ringOf(t, c, "steps"), ringOf(t, c, "grown"); len(a) != len(ids)*100 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("ring built in steps: %d points, grown: %d, or they differ", len(a), len(b))
	}
	for i := range 50 {
		key := fmt.Sprintf("customer-%d", i)
		a := dispatchKey(t, svc, "steps", key, i)
		if b := dispatchKey(t, svc, "grown", key, i); a != b {
			t.Errorf("key %s: %s in the pool switched, %s in the one that hashed from the start", key, a, b)
		}
	}
}

// TestRingBuildWhileScalesChange registers and deletes Scales while a pool
// switches to consistent-hash: however the steps and the changes
// interleave, the ring must end holding the points of exactly the Scales
// registered.
func TestRingBuildWhileScalesChange(t *testing.T) {
	_, c, svc := ringEnv(t)
	ctx := context.Background()
	ids := numbered("s-", 200)
	mustPool(t, svc, "p")
	putScales(t, svc, "p", ids)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 40 {
			if _, _, err := svc.PutScale(ctx, "p", fmt.Sprintf("new-%02d", i), dispatch.ScaleSpec{}); err != nil {
				t.Errorf("PutScale: %v", err)
			}
			if err := svc.DeleteScale(ctx, "p", ids[i], false); err != nil {
				t.Errorf("DeleteScale: %v", err)
			}
		}
	})
	hash := dispatch.ConsistentHash
	if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &hash}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	scales, err := c.HKeys(ctx, poolKey("p", "scales")).Result()
	if err != nil {
		t.Fatal(err)
	}
	ring := ringOf(t, c, "p")
	if len(ring) != len(scales)*100 {
		t.Fatalf("ring: %d points for %d Scales, want 100 each", len(ring), len(scales))
	}
	for _, id := range scales {
		if err := c.ZScore(ctx, poolKey("p", "ring"), id+"#99").Err(); err != nil {
			t.Errorf("Scale %s has no point %s#99: %v", id, id, err)
		}
	}
}

// ringEnv starts a redis-server and returns it, a client and a Service on
// it.
func ringEnv(t testing.TB) (*redistest.Server, goredis.UniversalClient, *dispatch.Service) {
	t.Helper()
	srv := redistest.Start(t)
	c := newClient(t, srv)
	return srv, c, dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
}

// numbered returns n ids: prefix and a number from 000.
func numbered(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return ids
}

// ringOf returns a pool's ring: members and scores in order.
func ringOf(t testing.TB, c goredis.UniversalClient, pool string) []goredis.Z {
	t.Helper()
	z, err := c.ZRangeWithScores(context.Background(), poolKey(pool, "ring"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// dispatchKey dispatches one order with key and returns its Scale.
func dispatchKey(t testing.TB, svc *dispatch.Service, pool, key string, i int) string {
	t.Helper()
	in := dispatch.DispatchInput{Pool: pool, Orders: []dispatch.OrderInput{{ID: fmt.Sprintf("o%d", i), Key: key}}}
	b, _, err := svc.Dispatch(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return b.Assignments[0].CompID
}

// TestRingBuildResumes cuts a switch to consistent-hash short after two
// steps: the pool keeps its strategy, and the next switch places only the
// Scales the first did not.
func TestRingBuildResumes(t *testing.T) {
	srv, c, svc := ringEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	c.AddHook(&cancelAfterSteps{steps: 2, cancel: cancel})
	ids := numbered("s-", 3*ringStep)
	mustPool(t, svc, "p")
	putScales(t, svc, "p", ids)
	hash := dispatch.ConsistentHash
	if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &hash}); err == nil {
		t.Fatal("PutPool with its context cancelled after two steps: no error")
	}
	if p, err := svc.GetPool(context.Background(), "p"); err != nil || p.Strategy != dispatch.Waterfill {
		t.Fatalf("after the cut: strategy %s, %v; want waterfill still", p.Strategy, err)
	}
	if n := len(ringOf(t, c, "p")); n != 2*ringStep*100 {
		t.Fatalf("after the cut: %d ring points, want the two steps' %d", n, 2*ringStep*100)
	}
	calls := scriptCalls(t, c, srv.Addr(), func() {
		if _, _, err := svc.PutPool(context.Background(), "p", dispatch.PoolSpec{Strategy: &hash}); err != nil {
			t.Fatal(err)
		}
	})
	placed := 0
	for _, call := range calls {
		if call[0] == "ZADD" && call[1] == poolKey("p", "ring") {
			placed += (len(call) - 2) / 2
		}
	}
	if placed != ringStep*100 {
		t.Errorf("the second switch placed %d points, want the %d the first did not", placed, ringStep*100)
	}
	if n := len(ringOf(t, c, "p")); n != len(ids)*100 {
		t.Errorf("ring: %d points, want %d", n, len(ids)*100)
	}
}

// cancelAfterSteps is a go-redis hook that cancels a context once steps
// ring_build 'add' calls have answered.
type cancelAfterSteps struct {
	steps  int
	cancel context.CancelFunc
	mu     sync.Mutex
}

func (h *cancelAfterSteps) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *cancelAfterSteps) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

func (h *cancelAfterSteps) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		// FCALL function numkeys key… step: the step follows the keys.
		args := cmd.Args()
		at := 3
		if len(args) > 2 {
			n, _ := args[2].(int)
			at += n
		}
		if len(args) > at && fmt.Sprint(args[at]) == "add" {
			h.mu.Lock()
			if h.steps--; h.steps == 0 {
				h.cancel()
			}
			h.mu.Unlock()
		}
		return err
	}
}

// churnHook registers a Scale of its own through register before each call
// that it sees pass with the argument on (default "add", a step of a ring
// build), as a fleet that keeps growing would.
type churnHook struct {
	register func(i int)
	on       string
	n        int
}

func (h *churnHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *churnHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		on := h.on
		if on == "" {
			on = "add"
		}
		if slices.Contains(cmd.Args(), any(on)) {
			h.n++
			h.register(h.n)
		}
		return next(ctx, cmd)
	}
}

func (h *churnHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// TestRingChurnOfALargePool switches a pool of 1,050 Scales to
// consistent-hash while a Scale registers before every step of the build:
// the steps never catch up, and instead of building 105,000 points in one
// script, which would hold Redis, the switch fails as unavailable and the
// pool keeps its strategy. Once the Scales settle the switch goes through.
func TestRingChurnOfALargePool(t *testing.T) {
	srv, c, svc := ringEnv(t)
	ctx := context.Background()
	mustPool(t, svc, "big")
	putScales(t, svc, "big", numbered("s-", 1050))
	other := dispatch.NewService(redis.New(newClient(t, srv), redis.Options{}), dispatch.Config{})
	churn := &churnHook{register: func(i int) {
		if _, _, err := other.PutScale(ctx, "big", fmt.Sprintf("late-%03d", i), dispatch.ScaleSpec{}); err != nil {
			t.Errorf("PutScale: %v", err)
		}
	}}
	c.AddHook(churn)
	hash := dispatch.ConsistentHash
	if _, _, err := svc.PutPool(ctx, "big", dispatch.PoolSpec{Strategy: &hash}); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Fatalf("switch while Scales keep registering: %v, want ErrUnavailable", err)
	}
	if p, err := svc.GetPool(ctx, "big"); err != nil || p.Strategy != dispatch.Waterfill {
		t.Fatalf("pool after the failed switch: %+v, %v, want waterfill", p, err)
	}
	if churn.n < 3 {
		t.Fatalf("%d ring steps seen, want one or more in each of the 3 tries", churn.n)
	}
	churn.register = func(int) {}
	if _, _, err := svc.PutPool(ctx, "big", dispatch.PoolSpec{Strategy: &hash}); err != nil {
		t.Fatalf("switch once the Scales settled: %v", err)
	}
	scales, err := c.HLen(ctx, poolKey("big", "scales")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ringOf(t, c, "big")); n != int(scales)*100 {
		t.Fatalf("ring after the switch: %d points for %d Scales, want 100 each", n, scales)
	}
}

// TestRingChurnBeforeTheSwitch lets the steps of a pool of 1,050 Scales
// finish, and registers a Scale between the last step and the switch: the
// switch may not place the whole ring in its own call. It builds again in
// steps and switches; when a Scale comes before every switch, it fails as
// unavailable after three tries and the pool keeps its strategy.
func TestRingChurnBeforeTheSwitch(t *testing.T) {
	srv, c, svc := ringEnv(t)
	ctx := context.Background()
	other := dispatch.NewService(redis.New(newClient(t, srv), redis.Options{}), dispatch.Config{})
	hash := dispatch.ConsistentHash
	for _, tc := range []struct {
		pool  string
		times int // how many switches a Scale registers before
		fails bool
	}{
		{"once", 1, false},
		{"always", 1000, true},
	} {
		mustPool(t, svc, tc.pool)
		putScales(t, svc, tc.pool, numbered("s-", 1050))
		churn := &churnHook{on: string(hash)}
		churn.register = func(i int) {
			if i > tc.times {
				return
			}
			if _, _, err := other.PutScale(ctx, tc.pool, fmt.Sprintf("late-%03d", i), dispatch.ScaleSpec{}); err != nil {
				t.Errorf("PutScale: %v", err)
			}
		}
		c.AddHook(churn)
		_, _, err := svc.PutPool(ctx, tc.pool, dispatch.PoolSpec{Strategy: &hash})
		churn.register = func(int) {}
		p, gerr := svc.GetPool(ctx, tc.pool)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if tc.fails {
			if !errors.Is(err, dispatch.ErrUnavailable) || p.Strategy != dispatch.Waterfill || churn.n != 3 {
				t.Fatalf("%s: switch: %v, strategy %s after %d switch calls; want ErrUnavailable, waterfill, 3", tc.pool, err, p.Strategy, churn.n)
			}
			continue
		}
		// the first switch call refused to build, the second switched
		if err != nil || p.Strategy != hash || churn.n != 2 {
			t.Fatalf("%s: switch: %v, strategy %s after %d switch calls; want it switched in the second", tc.pool, err, p.Strategy, churn.n)
		}
		scales, err := c.HLen(ctx, poolKey(tc.pool, "scales")).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(ringOf(t, c, tc.pool)); n != int(scales)*100 || scales != 1051 {
			t.Fatalf("%s: ring of %d points for %d Scales, want 100 for each of 1051", tc.pool, n, scales)
		}
	}
}
