package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// lagged is a primary whose one replica replicates through a LagLink.
type lagged struct {
	primary, replica *redistest.Server
	link             *redistest.LagLink
}

func startLagged(t testing.TB) lagged {
	t.Helper()
	primary := redistest.Start(t)
	link := redistest.NewLagLink(t, primary.Addr())
	replica := redistest.StartReplica(t, primary, "--replicaof", "127.0.0.1", strconv.Itoa(link.Port()))
	return lagged{primary, replica, link}
}

// storeOp is one call of a dispatch.Store, a write or a read.
type storeOp struct {
	name string
	do   func(s dispatch.Store) error
}

// everyOp returns a call of every method of dispatch.Store that answers
// from Redis (all but Ping), on pool p, which setUpEveryOp prepared; the
// writes take n to name what they add, so that they can run again.
func everyOp(n int) []storeOp {
	ctx, now := context.Background(), time.Now()
	id := func(s string) string { return fmt.Sprintf("%s-%d", s, n) }
	return []storeOp{
		{"PutPool", func(s dispatch.Store) error {
			_, _, err := s.PutPool(ctx, id("pool"), dispatch.PoolSpec{}, now)
			return err
		}},
		{"PutScale", func(s dispatch.Store) error {
			_, _, err := s.PutScale(ctx, "p", id("T"), dispatch.ScaleSpec{}, now)
			return err
		}},
		{"Dispatch", func(s dispatch.Store) error {
			_, _, err := s.Dispatch(ctx, batchRequest("p", id("b"), 2))
			return err
		}},
		{"DispatchMany", func(s dispatch.Store) error {
			rs := s.(dispatch.MultiDispatcher).DispatchMany(ctx, []dispatch.DispatchRequest{batchRequest("p", id("m1"), 1), batchRequest("p", id("m2"), 1)})
			return errors.Join(rs[0].Err, rs[1].Err)
		}},
		{"Complete", func(s dispatch.Store) error {
			_, _, err := s.Complete(ctx, "p", []dispatch.Completion{{OrderID: id("c") + "-o0"}}, now)
			return err
		}},
		{"Complete bulk", func(s dispatch.Store) error {
			_, _, err := s.Complete(ctx, "p", []dispatch.Completion{{OrderID: id("c") + "-o1"}, {OrderID: id("c") + "-o2"}}, now)
			return err
		}},
		{"Cancel", func(s dispatch.Store) error {
			_, err := s.Cancel(ctx, "p", id("c")+"-o3", now)
			return err
		}},
		{"Reassign", func(s dispatch.Store) error {
			_, err := s.Reassign(ctx, dispatch.ReassignRequest{Pool: "p", CompID: id("D"), Now: now, MaxCost: dispatch.DefaultMaxCost})
			return err
		}},
		{"DeleteScale", func(s dispatch.Store) error {
			return s.DeleteScale(ctx, "p", id("X"), true, now)
		}},
		{"DeletePool", func(s dispatch.Store) error { return s.DeletePool(ctx, id("gone")) }},
		{"GetPool", func(s dispatch.Store) error { _, err := s.GetPool(ctx, "p"); return err }},
		{"ListPools", func(s dispatch.Store) error {
			_, _, err := s.ListPools(ctx, dispatch.Page{})
			return err
		}},
		{"GetScale", func(s dispatch.Store) error { _, err := s.GetScale(ctx, "p", "S0"); return err }},
		{"ListScales", func(s dispatch.Store) error {
			_, _, err := s.ListScales(ctx, "p", dispatch.Page{})
			return err
		}},
		{"GetBatch", func(s dispatch.Store) error { _, err := s.GetBatch(ctx, "p", id("c"), now); return err }},
		{"GetOrder", func(s dispatch.Store) error { _, err := s.GetOrder(ctx, "p", id("c")+"-o0", now); return err }},
		{"ListScaleOrders", func(s dispatch.Store) error {
			_, _, err := s.ListScaleOrders(ctx, "p", "S0", dispatch.Page{})
			return err
		}},
		{"Table", func(s dispatch.Store) error { _, err := s.Table(ctx, "p"); return err }},
		// A domain error shows state too: that order c-N-o0 exists.
		{"Dispatch of an order held", func(s dispatch.Store) error {
			req := batchRequest("p", id("c"), 1)
			req.BatchID = id("again")
			_, _, err := s.Dispatch(ctx, req)
			if errors.Is(err, dispatch.ErrOrderExists) {
				return nil
			}
			return err
		}},
	}
}

// setUpEveryOp prepares what everyOp(n) works on: a batch c-N of four
// orders, a Scale D-N that is down, a Scale X-N, a pool gone-N.
func setUpEveryOp(t testing.TB, s dispatch.Store, n int) {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	id := func(s string) string { return fmt.Sprintf("%s-%d", s, n) }
	down := dispatch.Down
	for _, step := range []func() error{
		func() error { _, _, err := s.PutPool(ctx, id("gone"), dispatch.PoolSpec{}, now); return err },
		func() error { _, _, err := s.Dispatch(ctx, batchRequest("p", id("c"), 4)); return err },
		func() error { _, _, err := s.PutScale(ctx, "p", id("X"), dispatch.ScaleSpec{}, now); return err },
		func() error { _, _, err := s.PutScale(ctx, "p", id("D"), dispatch.ScaleSpec{}, now); return err },
		func() error {
			_, _, err := s.PutScale(ctx, "p", id("D"), dispatch.ScaleSpec{State: &down}, now)
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatalf("setting up the calls: %v", err)
		}
	}
}

// TestWaitEveryAnswer: with WaitReplicas 1 and the replica connected but
// behind (its stream held, its ACKs of a stale offset still reaching the
// primary), every call of the Store, each kind of write and each read,
// fails with dispatch.ErrNotReplicated (a dispatch with an
// IndeterminateError naming its batch), though the writes are applied on
// the primary; with the replica in sync each succeeds, and a write is on
// the replica when it returns.
func TestWaitEveryAnswer(t *testing.T) {
	l := startLagged(t)
	c := newClient(t, l.primary)
	s := redis.New(c, redis.Options{WaitReplicas: 1, WaitTimeout: time.Second})
	onReplica := redis.New(newClient(t, l.replica), redis.Options{})
	poolWithScales(t, s, "p", 2)
	setUpEveryOp(t, s, 0)
	for _, op := range everyOp(0) {
		if err := op.do(s); err != nil {
			t.Errorf("%s with the replica in sync: %v", op.name, err)
		}
	}
	setUpEveryOp(t, s, 1)
	if o, err := onReplica.GetOrder(context.Background(), "p", "c-0-o3", time.Now()); err != nil || o.State != dispatch.Cancelled {
		t.Errorf("cancelled order on the replica after Cancel returned: %+v, %v", o, err)
	}

	l.link.Hold()
	// At once: they share their WAITs, so this takes a wait timeout or two.
	ops := everyOp(1)
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Go(func() { errs[i] = op.do(s) })
	}
	wg.Wait()
	for i, op := range ops {
		err := errs[i]
		if !errors.Is(err, dispatch.ErrNotReplicated) {
			t.Errorf("%s with the replica behind: got %v, want ErrNotReplicated", op.name, err)
			continue
		}
		if ind, ok := errors.AsType[*dispatch.IndeterminateError](err); op.name == "Dispatch" && (!ok || ind.BatchID != "b-1") {
			t.Errorf("%s with the replica behind: got %v, want an IndeterminateError naming b-1", op.name, err)
		}
	}
	plain := redis.New(c, redis.Options{})
	if o, err := plain.GetOrder(context.Background(), "p", "c-1-o3", time.Now()); err != nil || o.State != dispatch.Cancelled {
		t.Errorf("order c-1-o3 on the primary after the Cancel that failed: %+v, %v; want it cancelled there", o, err)
	}
	if o, err := onReplica.GetOrder(context.Background(), "p", "c-1-o3", time.Now()); err != nil || o.State != dispatch.Assigned {
		t.Errorf("order c-1-o3 on the replica held back: %+v, %v; want it assigned", o, err)
	}

	l.link.Release()
	// The retries: what the first attempt applied counts once.
	for _, op := range everyOp(1) {
		if err := op.do(s); err != nil && !errors.Is(err, dispatch.ErrOrderExists) && !errors.Is(err, dispatch.ErrScaleNotFound) &&
			!errors.Is(err, dispatch.ErrPoolNotFound) {
			t.Errorf("%s again once the replica caught up: %v", op.name, err)
		}
	}
	if o, err := onReplica.GetOrder(context.Background(), "p", "c-1-o3", time.Now()); err != nil || o.State != dispatch.Cancelled {
		t.Errorf("order c-1-o3 on the replica after the retry: %+v, %v; want it cancelled", o, err)
	}
}

// TestWaitShared: concurrent calls share WAITs. While four WAITs are in
// flight (the replica behind), every call answered meanwhile joins the
// next: at most 5 WAITs for 1+8 calls, all of which fail. In sync, n
// callers making m calls each send fewer WAITs than calls.
func TestWaitShared(t *testing.T) {
	l := startLagged(t)
	c := newClient(t, l.primary)
	s := redis.New(c, redis.Options{WaitReplicas: 1, WaitTimeout: time.Second})
	poolWithScales(t, s, "p", 2)

	l.link.Hold()
	resetStats(t, c)
	first := make(chan error, 1)
	go func() { _, err := s.GetPool(context.Background(), "p"); first <- err }()
	if !waitFor(5*time.Second, func() bool { return commandCalls(t, c, "set") == 1 }) {
		t.Fatalf("the first call's round did not start: %d SETs, %d WAITs", commandCalls(t, c, "set"), commandCalls(t, c, "wait"))
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.GetScale(context.Background(), "p", "S0") })
	}
	wg.Wait()
	if err := <-first; !errors.Is(err, dispatch.ErrNotReplicated) {
		t.Errorf("the first call: %v, want ErrNotReplicated", err)
	}
	for i, err := range errs {
		if !errors.Is(err, dispatch.ErrNotReplicated) {
			t.Errorf("call %d: %v, want ErrNotReplicated", i, err)
		}
	}
	// The first call's round and three more in flight (maxRoundsInFlight),
	// then one for every call that arrived meanwhile.
	if got := commandCalls(t, c, "wait"); got > 5 {
		t.Errorf("WAITs for %d calls with the replica behind: %d, want at most 5", n+1, got)
	}
	l.link.Release()

	// In sync, with a timeout that a loaded machine's replica keeps
	// within: this part counts WAITs, not timeouts.
	s = redis.New(c, redis.Options{WaitReplicas: 1, WaitTimeout: 2 * time.Second})
	resetStats(t, c)
	const callers, calls = 16, 25
	for i := range callers {
		wg.Go(func() {
			for j := range calls {
				if _, _, err := s.Dispatch(context.Background(), batchRequest("p", fmt.Sprintf("s%d-%d", i, j), 1)); err != nil {
					t.Errorf("dispatch in sync: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	waits := commandCalls(t, c, "wait")
	t.Logf("%d concurrent callers, %d dispatches: %d WAITs", callers, callers*calls, waits)
	if waits < 1 || waits >= callers*calls {
		t.Errorf("WAITs for %d dispatches of %d callers: %d, want from 1 to fewer than the dispatches", callers*calls, callers, waits)
	}
}
