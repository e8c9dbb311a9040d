package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestRetriedScriptsApplyOnce loses the reply of every mutating script after
// Redis has run it, so go-redis runs each script twice; every call must
// still answer as if it ran once, and every count must equal the records.
func TestRetriedScriptsApplyOnce(t *testing.T) {
	srv, px, st, svc := proxiedService(t)
	ctx := context.Background()
	direct := newClient(t, srv)
	lost, runs := int64(0), fcallCalls(t, direct)
	retried := func(what string) {
		t.Helper()
		lost++
		if got := px.Dropped(); got != lost {
			t.Fatalf("%s: %d replies lost, want %d", what, got, lost)
		}
		// Proof that the script ran twice: Redis counted two FCALLs.
		now := fcallCalls(t, direct)
		if now-runs != 2 {
			t.Fatalf("%s: Redis ran %d FCALLs, want 2 (the call and go-redis's retry)", what, now-runs)
		}
		runs = now
	}

	px.DropNext(1)
	if _, created, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{}); err != nil || !created {
		t.Fatalf("PutPool: created %v, %v; want true, nil", created, err)
	}
	retried("PutPool")
	for _, id := range []string{"A", "B", "C", "D", "E"} {
		px.DropNext(1)
		if _, created, err := svc.PutScale(ctx, "p", id, dispatch.ScaleSpec{}); err != nil || !created {
			t.Fatalf("PutScale %s: created %v, %v; want true, nil", id, created, err)
		}
		retried("PutScale")
	}

	var batches []dispatch.Batch
	var orders []string
	for i := range 40 {
		in := dispatch.DispatchInput{Pool: "p"}
		for j := range 1 + i%17 {
			in.Orders = append(in.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o-%d-%d", i, j)})
		}
		if i%3 == 0 {
			in.IdempotencyKey, in.Fingerprint = fmt.Sprintf("k%d", i), "fp"
		}
		px.DropNext(1)
		b, replayed, err := svc.Dispatch(ctx, in)
		if err != nil || replayed {
			t.Fatalf("Dispatch %d: replayed %v, %v; want false, nil", i, replayed, err)
		}
		retried("Dispatch")
		batches = append(batches, b)
		for _, o := range in.Orders {
			orders = append(orders, o.ID)
		}
	}

	// A coalesced call: the first loads the script, the second loses its
	// reply. Its third batch holds an order of its first.
	req := func(batchID string, ids ...string) dispatch.DispatchRequest {
		r := dispatch.DispatchRequest{Pool: "p", BatchID: batchID, Now: time.Now().Truncate(time.Millisecond),
			Rand: make([]uint64, 2*len(ids)), IdempotencyTTL: dispatch.DefaultIdempotencyTTL}
		for _, id := range ids {
			r.Orders = append(r.Orders, dispatch.OrderInput{ID: id})
		}
		return r
	}
	for _, r := range st.DispatchMany(ctx, []dispatch.DispatchRequest{req("m0", "m0-1")}) {
		if r.Err != nil {
			t.Fatalf("DispatchMany: %v", r.Err)
		}
		batches, orders = append(batches, r.Batch), append(orders, "m0-1")
	}
	runs = fcallCalls(t, direct)
	px.DropNext(1)
	many := st.DispatchMany(ctx, []dispatch.DispatchRequest{req("m1", "m1-1", "m1-2"), req("m2", "m2-1"), req("m3", "m3-1", "m1-2")})
	retried("DispatchMany")
	for i, r := range many[:2] {
		if r.Err != nil || r.Replayed {
			t.Fatalf("DispatchMany batch %d: replayed %v, %v", i, r.Replayed, r.Err)
		}
		batches = append(batches, r.Batch)
		for _, a := range r.Batch.Assignments {
			orders = append(orders, a.OrderID)
		}
	}
	if !errors.Is(many[2].Err, dispatch.ErrOrderExists) {
		t.Fatalf("DispatchMany batch 2: %v, want ErrOrderExists", many[2].Err)
	}
	if _, err := st.GetOrder(ctx, "p", "m3-1", time.Now()); !errors.Is(err, dispatch.ErrOrderNotFound) {
		t.Fatalf("order m3-1 of the failed batch: %v, want ErrOrderNotFound", err)
	}

	var done []dispatch.Completion
	for _, id := range orders[:60] {
		done = append(done, dispatch.Completion{OrderID: id, DurationMs: 10})
	}
	px.DropNext(1)
	if n, err := svc.Complete(ctx, "p", done); err != nil || n != 60 {
		t.Fatalf("Complete: %d, %v; want 60, nil", n, err)
	}
	retried("Complete")
	px.DropNext(1)
	if o, err := svc.CancelOrder(ctx, "p", orders[60]); err != nil || o.State != dispatch.Cancelled {
		t.Fatalf("CancelOrder: %v, %v", o.State, err)
	}
	retried("CancelOrder")

	for _, b := range batches {
		got, err := st.GetBatch(ctx, "p", b.ID, time.Now())
		if err != nil {
			t.Fatalf("GetBatch: %v", err)
		}
		if fmt.Sprint(got.Assignments) != fmt.Sprint(b.Assignments) {
			t.Fatalf("batch %s: got %v, want %v as first answered", b.ID, got.Assignments, b.Assignments)
		}
	}
	checkCounts(t, st, "p", orders)

	// D goes down and its orders move.
	down := dispatch.Down
	if _, _, err := svc.PutScale(ctx, "p", "D", dispatch.ScaleSpec{State: &down}); err != nil {
		t.Fatalf("PutScale D down: %v", err)
	}
	d, err := st.GetScale(ctx, "p", "D")
	if err != nil || d.Outstanding == 0 {
		t.Fatalf("GetScale D: %d outstanding, %v; the test needs some", d.Outstanding, err)
	}
	runs = fcallCalls(t, direct)
	px.DropNext(1)
	moves, err := st.Reassign(ctx, dispatch.ReassignRequest{Pool: "p", CompID: "D", Now: time.Now(),
		Rand: make([]uint64, 2*d.Outstanding), MaxCost: dispatch.DefaultMaxCost})
	if err != nil || int64(len(moves)) != d.Outstanding {
		t.Fatalf("Reassign D: %d moves, %v; want %d", len(moves), err, d.Outstanding)
	}
	retried("Reassign")

	px.DropNext(1)
	if err := svc.DeleteScale(ctx, "p", "E", true); err != nil {
		t.Fatalf("DeleteScale: %v", err)
	}
	retried("DeleteScale")
	checkCounts(t, st, "p", orders)
	checkCounters(t, st, "p", orders, int64(len(moves)))
	px.DropNext(1)
	if err := svc.DeletePool(ctx, "p"); err != nil {
		t.Fatalf("DeletePool: %v", err)
	}
	retried("DeletePool")
}

// proxiedService starts a redis-server behind a proxy that can lose or hold
// the replies of FCALL, and returns them with a Store that talks through
// the proxy (a client of NewClient) and a Service over it, its scripts
// loaded.
func proxiedService(t testing.TB) (*redistest.Server, *redistest.Proxy, *redis.Store, *dispatch.Service) {
	t.Helper()
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "fcall")
	c, err := redis.NewClient("redis://"+px.Addr(), "single")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	warmUp(t, svc)
	return srv, px, st, svc
}

// fcallCalls returns how many FCALL commands (the library's mutating
// functions) Redis has run.
func fcallCalls(t testing.TB, c goredis.UniversalClient) int64 {
	t.Helper()
	return commandStat(t, c, "calls", "fcall")
}

// commandStat sums field (calls, usec) of INFO commandstats over the
// commands cmds.
func commandStat(t testing.TB, c goredis.UniversalClient, field string, cmds ...string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range cmds {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
				_, after, _ := strings.Cut(","+rest, ","+field+"=")
				n, _ := strconv.ParseInt(after[:strings.IndexByte(after, ',')], 10, 64)
				total += n
			}
		}
	}
	return total
}

// checkCounts checks that every Scale's outstanding equals the number of its
// assigned orders among ids (all the pool's orders), and its orderCount its
// baseLoad plus outstanding.
func checkCounts(t *testing.T, st dispatch.Store, pool string, ids []string) {
	t.Helper()
	ctx := context.Background()
	assigned := make(map[string]int64)
	for _, id := range ids {
		o, err := st.GetOrder(ctx, pool, id, time.Now())
		if errors.Is(err, dispatch.ErrOrderNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("GetOrder %s: %v", id, err)
		}
		if o.State == dispatch.Assigned {
			assigned[o.CompID]++
		}
	}
	scales, _, err := st.ListScales(ctx, pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		t.Fatalf("ListScales: %v", err)
	}
	var total int64
	for _, sc := range scales {
		if sc.Outstanding != assigned[sc.CompID] {
			t.Errorf("scale %s: outstanding %d, want %d assigned orders", sc.CompID, sc.Outstanding, assigned[sc.CompID])
		}
		total += assigned[sc.CompID]
	}
	var want int64
	for _, n := range assigned {
		want += n
	}
	if total != want {
		t.Errorf("assigned orders on listed Scales: %d, want %d", total, want)
	}
}

// checkCounters checks the pool's counters (Snapshot) against its orders
// ids, all still held, and the number of orders moved.
func checkCounters(t *testing.T, st dispatch.Store, pool string, ids []string, moved int64) {
	t.Helper()
	ctx := context.Background()
	want := dispatch.Counters{Moved: moved}
	for _, id := range ids {
		o, err := st.GetOrder(ctx, pool, id, time.Now())
		if err != nil {
			t.Fatalf("GetOrder %s: %v", id, err)
		}
		want.Dispatched++
		switch o.State {
		case dispatch.Completed:
			want.Completed++
		case dispatch.Cancelled:
			want.Cancelled++
		}
	}
	snap, err := st.Snapshot(ctx, pool, dispatch.SnapshotEdge, dispatch.HistogramBuckets)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap.Counters != want {
		t.Errorf("counters: got %+v, want %+v (the orders recorded)", snap.Counters, want)
	}
}

// TestDispatchWithoutAnswerIsIndeterminate holds the reply of a dispatch
// until the caller's deadline: the batch may have been applied, so the
// error names it, and it was.
func TestDispatchWithoutAnswerIsIndeterminate(t *testing.T) {
	_, px, st, svc := proxiedService(t)
	ctx := context.Background()
	mustPool(t, svc, "p", "A", "B")

	px.HoldNext(1)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, _, err := svc.Dispatch(tctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}})
	var ind *dispatch.IndeterminateError
	if !errors.As(err, &ind) || !errors.Is(err, dispatch.ErrUnavailable) {
		t.Fatalf("Dispatch without an answer: got %v, want an IndeterminateError", err)
	}
	if ind.BatchID == "" {
		t.Fatalf("IndeterminateError without a batch id")
	}
	b, err := st.GetBatch(ctx, "p", ind.BatchID, time.Now())
	if err != nil || len(b.Assignments) != 1 {
		t.Fatalf("GetBatch %s after the lost answer: %v, %v; want the batch", ind.BatchID, b, err)
	}
}

// TestDroppedWithoutRetryIsIndeterminate: with go-redis retries off, a
// connection cut after Redis ran the dispatch leaves the caller an
// IndeterminateError naming the batch, which was applied.
func TestDroppedWithoutRetryIsIndeterminate(t *testing.T) {
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "fcall")
	c := goredis.NewClient(&goredis.Options{Addr: px.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	warmUp(t, svc)
	mustPool(t, svc, "p", "A")
	px.DropNext(1)
	_, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}})
	var ind *dispatch.IndeterminateError
	if !errors.As(err, &ind) {
		t.Fatalf("Dispatch cut after it ran: got %v, want an IndeterminateError", err)
	}
	if _, err := st.GetBatch(context.Background(), "p", ind.BatchID, time.Now()); err != nil {
		t.Fatalf("GetBatch %s: %v, want the applied batch", ind.BatchID, err)
	}
}

// TestUnreachableRedis: nothing listens, so the dispatch fails at once with
// ErrUnavailable. The Service still names the batch (it cannot know that no
// earlier attempt reached Redis), and once Redis is back the batch is
// plainly absent.
func TestUnreachableRedis(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Stop()
	c, err := redis.NewClient("redis://"+addr, "single")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	// The deadline only stops a hang; failing fast is the store's own doing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err = svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}})
	ind, ok := errors.AsType[*dispatch.IndeterminateError](err)
	if !errors.Is(err, dispatch.ErrUnavailable) || !ok || ctx.Err() != nil {
		t.Fatalf("Dispatch to a stopped Redis: got %v, want ErrUnavailable naming the batch, before the deadline", err)
	}
	if err := st.Ping(ctx); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Ping: got %v, want ErrUnavailable", err)
	}
	srv.Restart()
	if _, err := st.GetBatch(ctx, "p", ind.BatchID, time.Now()); !errors.Is(err, dispatch.ErrPoolNotFound) && !errors.Is(err, dispatch.ErrBatchNotFound) {
		t.Errorf("GetBatch %s after restart: got %v, want not found: nothing was applied", ind.BatchID, err)
	}
}

// TestRecoversWhenRedisReturns stops Redis under a running store, then
// starts it again on the same port: calls fail fast meanwhile and work
// again afterwards, with no help.
func TestRecoversWhenRedisReturns(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	mustPool(t, svc, "p", "A")

	srv.Stop()
	for i := range 3 {
		// The deadline only catches a hang: failing fast is the store's doing.
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := svc.GetPool(cctx, "p")
		if !errors.Is(err, dispatch.ErrUnavailable) || cctx.Err() != nil {
			t.Fatalf("GetPool %d while Redis is down: got %v, want ErrUnavailable before the deadline", i, err)
		}
		cancel()
	}
	if err := svc.Ready(ctx); !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Ready while Redis is down: got %v, want ErrUnavailable", err)
	}

	srv.Restart() // empty: the test server keeps nothing on disk
	if !waitFor(5*time.Second, func() bool { return svc.Ready(ctx) == nil }) {
		t.Fatalf("Ready after Redis returned: %v", svc.Ready(ctx))
	}
	mustPool(t, svc, "p", "A")
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}}); err != nil {
		t.Fatalf("Dispatch after Redis returned: %v", err)
	}
}

// mustPool creates pool with the Scales compIDs, all at orderCount 0.
func mustPool(t testing.TB, svc *dispatch.Service, pool string, compIDs ...string) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := svc.PutPool(ctx, pool, dispatch.PoolSpec{}); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	for _, id := range compIDs {
		if _, _, err := svc.PutScale(ctx, pool, id, dispatch.ScaleSpec{}); err != nil {
			t.Fatalf("PutScale: %v", err)
		}
	}
}

// warmUp runs every kind of call once, so that Redis has the library and a
// lost reply hits a function that ran, not a "Function not found" answer.
func warmUp(t testing.TB, svc *dispatch.Service) {
	t.Helper()
	ctx := context.Background()
	mustPool(t, svc, "warm", "A")
	steps := []func() error{
		func() error { _, err := svc.GetPool(ctx, "warm"); return err },
		func() error { _, _, err := svc.ListScales(ctx, "warm", dispatch.Page{}); return err },
		func() error {
			_, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "warm", Orders: []dispatch.OrderInput{{ID: "w1"}, {ID: "w2"}}})
			return err
		},
		func() error { _, err := svc.CompleteOrder(ctx, "warm", "w1", 0); return err },
		func() error { return svc.DeleteScale(ctx, "warm", "A", true) },
		func() error { return svc.DeletePool(ctx, "warm") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("warm-up step %d: %v", i, err)
		}
	}
}

// quiet silences go-redis's log of failed dials, which the tests that stop
// Redis provoke on purpose.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	goredis.SetLogger(quiet{})
	m.Run()
}
