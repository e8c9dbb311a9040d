package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// TestClusterWithReplicas runs the store on a Redis Cluster built as an
// operator builds one: six nodes, three primaries with a replica each,
// joined by redis-cli --cluster create. Its subtests share the cluster, in
// order: pools spread over the primaries, the conformance suite, a user
// with the least rights the store needs, then two failovers under load
// (which change the cluster for good).
func TestClusterWithReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("a six-node cluster and two failovers take seconds")
	}
	nodes := redistest.StartClusterReplicas(t, 3, 1, clusterNodeTimeout)
	c, err := redis.NewClient(redistest.ClusterURL(nodes), "cluster")
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cc := c.(*goredis.ClusterClient)
	flush := func(t testing.TB) {
		t.Helper()
		err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
			return m.FlushAll(ctx).Err()
		})
		if err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
	}
	t.Run("spread", func(t *testing.T) {
		flush(t)
		testClusterSpread(t, cc, redis.New(c, redis.Options{}))
	})
	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, func(t testing.TB, opts storetest.Options) dispatch.Store {
			flush(t)
			return redis.New(c, redis.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
		})
	})
	t.Run("acl", func(t *testing.T) {
		flush(t)
		// ACL users are each node's own: every node needs the user.
		addACLUser(t, nodes...)
		url := strings.Replace(redistest.ClusterURL(nodes), "redis://", "redis://dispatcher:"+aclPassword+"@", 1)
		ac, err := redis.NewClient(url, "cluster")
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer ac.Close()
		smokeTest(t, redis.New(ac, redis.Options{}))
	})
	t.Run("failover", func(t *testing.T) {
		flush(t)
		testClusterFailover(t, nodes, cc, redis.New(c, redis.Options{}))
	})
}

// clusterNodeTimeout is how long a primary may be unreachable before its
// replica takes over: short, to keep the test short, but long enough that
// a busy test machine does not fail nodes over by itself.
const clusterNodeTimeout = 5 * time.Second

// testClusterSpread creates 30 pools with a batch each and checks that
// every key of a pool lives in the pool's one slot, on the primary that
// owns that slot, and that the pools spread over all three primaries.
func testClusterSpread(t *testing.T, cc *goredis.ClusterClient, s *redis.Store) {
	const pools = 30
	owner := map[string]string{} // pool → primary address
	perPrimary := map[string][]string{}
	for i := range pools {
		pool := fmt.Sprintf("pool-%02d", i)
		poolWithScales(t, s, pool, 3)
		b, err := dispatchRetrying(s, pool, "b1", 10)
		if err != nil {
			t.Fatalf("dispatch in %s: %v", pool, err)
		}
		if len(b.Assignments) != 10 {
			t.Fatalf("dispatch in %s: got %d assignments, want 10", pool, len(b.Assignments))
		}
		m, err := cc.MasterForKey(context.Background(), "dispatch:{pool:"+pool+"}:meta")
		if err != nil {
			t.Fatalf("MasterForKey: %v", err)
		}
		owner[pool] = m.Options().Addr
		perPrimary[owner[pool]] = append(perPrimary[owner[pool]], pool)
	}
	var mu sync.Mutex
	seen := map[string]string{} // pool → primary that holds its keys
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, m *goredis.Client) error {
		addr := m.Options().Addr
		keys, err := m.Keys(ctx, "dispatch:{pool:*").Result()
		if err != nil {
			return err
		}
		slots := map[string]int64{}
		for _, k := range keys {
			pool := k[len("dispatch:{pool:"):strings.Index(k, "}")]
			slot, err := m.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				return err
			}
			if want, ok := slots[pool]; ok && slot != want {
				t.Errorf("key %s: slot %d, want the pool's slot %d", k, slot, want)
			}
			slots[pool] = slot
			mu.Lock()
			if other, ok := seen[pool]; ok && other != addr {
				t.Errorf("pool %s has keys on %s and on %s", pool, other, addr)
			}
			seen[pool] = addr
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the primaries: %v", err)
	}
	for pool, addr := range owner {
		if seen[pool] != addr {
			t.Errorf("pool %s: keys on %q, want them on the slot's primary %s", pool, seen[pool], addr)
		}
	}
	if len(perPrimary) != 3 {
		t.Errorf("the pools live on %d primaries, want all 3: %v", len(perPrimary), perPrimary)
	}
	for addr, ps := range perPrimary {
		t.Logf("primary %s holds %d pools", addr, len(ps))
	}
	all, err := listAllPools(s)
	if err != nil || len(all) != pools {
		t.Errorf("ListPools across the slots: got %d pools, %v; want %d", len(all), err, pools)
	}
}

// testClusterFailover keeps dispatching into six pools while first a
// replica takes over its primary's slots on request (CLUSTER FAILOVER, as
// in planned maintenance), then that new primary is killed and the old one,
// now its replica, takes over on its own. Every call that fails for want
// of Redis is retried with the same batch id, as a client retries a 503
// with the same Idempotency-Key. The store must serve every pool again
// within a bound, count every batch once, and keep each pool's counts equal
// to its recorded orders; the test logs how long each shard was out.
func testClusterFailover(t *testing.T, nodes []*redistest.Server, cc *goredis.ClusterClient, s *redis.Store) {
	pools := make([]string, 6)
	owner := map[string]string{}
	for i := range pools {
		pools[i] = fmt.Sprintf("fo-%d", i)
		poolWithScales(t, s, pools[i], 3)
		m, err := cc.MasterForKey(context.Background(), "dispatch:{pool:"+pools[i]+"}:meta")
		if err != nil {
			t.Fatal(err)
		}
		owner[pools[i]] = m.Options().Addr
	}
	victim := pools[0]
	primary := nodeWithAddr(t, nodes, owner[victim])
	replica := replicaOf(t, nodes, primary)

	l := startFailoverLoad(t, s, pools)
	time.Sleep(500 * time.Millisecond)

	// Planned: the replica takes over once it has caught up.
	planned := time.Now()
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if err := rc.Do(context.Background(), "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", replica.Addr(), err)
	}
	waitRole(t, replica, "master")
	l.waitSuccessAfter(t, victim, time.Now())
	time.Sleep(500 * time.Millisecond)

	// Unplanned: the new primary dies; the old one takes over once the
	// cluster has found it dead (cluster-node-timeout) and elected it.
	crash := time.Now()
	replica.Kill()
	waitRole(t, primary, "master")
	l.waitSuccessAfter(t, victim, time.Now())
	time.Sleep(500 * time.Millisecond)
	res := l.stop()

	for _, ev := range []struct {
		name string
		at   time.Time
	}{{"CLUSTER FAILOVER", planned}, {"primary killed", crash}} {
		for _, p := range pools {
			if gap := res.outage(p, ev.at); gap > 0 && owner[p] == owner[victim] {
				t.Logf("%s: pool %s (shard of %s) served again after %v", ev.name, p, owner[p], gap.Round(time.Millisecond))
			}
		}
	}
	t.Logf("%d batches dispatched; failed attempts, each retried: %v", res.batches, res.errors)

	// Every batch the store answered is recorded once, and each pool's
	// Scales count exactly the recorded orders. A batch the killed primary
	// acknowledged in its last moments may be lost (Redis replicates
	// asynchronously); none acknowledged well before may be.
	lost := 0
	for _, p := range pools {
		var orders int64
		for _, b := range res.done[p] {
			got, err := s.GetBatch(context.Background(), p, b.batch.ID, time.Now())
			if errors.Is(err, dispatch.ErrBatchNotFound) {
				lost++
				if owner[p] != owner[victim] || b.at.Before(crash.Add(-time.Second)) {
					t.Errorf("batch %s of pool %s, acknowledged at %v, is lost", b.batch.ID, p, b.at.Sub(crash))
				}
				continue
			}
			if err != nil {
				t.Fatalf("GetBatch %s in %s: %v", b.batch.ID, p, err)
			}
			if !slices.Equal(got.Assignments, b.batch.Assignments) {
				t.Errorf("batch %s in %s: got %v, want the answered %v", b.batch.ID, p, got.Assignments, b.batch.Assignments)
			}
			orders += int64(len(got.Assignments))
		}
		if n := sumOutstanding(t, s, p); n != orders {
			t.Errorf("pool %s: the Scales count %d outstanding orders, the recorded batches hold %d", p, n, orders)
		}
	}
	if lost > 0 {
		t.Logf("%d batches acknowledged just before the crash were lost with it", lost)
	}
}

// poolWithScales creates pool with n Scales.
func poolWithScales(t testing.TB, s dispatch.Store, pool string, n int) {
	t.Helper()
	now := time.Now()
	if err := replicated(func() error {
		_, _, err := s.PutPool(context.Background(), pool, dispatch.PoolSpec{}, now)
		return err
	}); err != nil {
		t.Fatalf("PutPool %s: %v", pool, err)
	}
	for i := range n {
		if err := replicated(func() error {
			_, _, err := s.PutScale(context.Background(), pool, fmt.Sprintf("S%d", i), dispatch.ScaleSpec{}, now)
			return err
		}); err != nil {
			t.Fatalf("PutScale in %s: %v", pool, err)
		}
	}
}

// batchRequest is a batch of n new orders, named after the batch.
func batchRequest(pool, batchID string, n int) dispatch.DispatchRequest {
	orders := make([]dispatch.OrderInput, n)
	for i := range orders {
		orders[i] = dispatch.OrderInput{ID: fmt.Sprintf("%s-o%d", batchID, i)}
	}
	return dispatch.DispatchRequest{
		Pool: pool, BatchID: batchID, Orders: orders, Now: time.Now(),
		Rand: make([]uint64, 2*n), IdempotencyTTL: dispatch.DefaultIdempotencyTTL, MaxCost: dispatch.DefaultMaxCost,
	}
}

// wouldRetry reports whether a client would retry err: Redis was out of
// reach, or the call's outcome is unknown.
func wouldRetry(err error) bool {
	var ind *dispatch.IndeterminateError
	return errors.Is(err, dispatch.ErrUnavailable) || errors.As(err, &ind)
}

// dispatchRetrying dispatches a batch of n orders, retrying with the same
// batch id for as long as Redis is out of reach, up to a bound.
func dispatchRetrying(s dispatch.Store, pool, batchID string, n int) (dispatch.Batch, error) {
	req := batchRequest(pool, batchID, n)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _, err := s.Dispatch(context.Background(), req)
		if err == nil || !wouldRetry(err) || time.Now().After(deadline) {
			return b, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listAllPools(s dispatch.Store) ([]dispatch.Pool, error) {
	var all []dispatch.Pool
	cursor := ""
	for {
		ps, next, err := s.ListPools(context.Background(), dispatch.Page{Limit: 7, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, ps...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// sumOutstanding sums the outstanding orders of the pool's Scales.
func sumOutstanding(t testing.TB, s dispatch.Store, pool string) int64 {
	t.Helper()
	var n int64
	cursor := ""
	for {
		scales, next, err := s.ListScales(context.Background(), pool, dispatch.Page{Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListScales %s: %v", pool, err)
		}
		for _, sc := range scales {
			n += sc.Outstanding
		}
		if next == "" {
			return n
		}
		cursor = next
	}
}

// failoverLoad dispatches into pools, one goroutine each, until stopped.
type failoverLoad struct {
	stopCh chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	res    failoverResult
}

type failoverResult struct {
	done    map[string][]answeredBatch // pool → answered batches in order
	errors  map[string]int             // failed attempts by kind
	batches int
}

type answeredBatch struct {
	batch dispatch.Batch
	at    time.Time
}

// startFailoverLoad starts the load; it stops at l.stop or, at the latest,
// when t ends (a t.Fatal before l.stop must not leave goroutines that
// report to a finished test).
func startFailoverLoad(t *testing.T, s dispatch.Store, pools []string) *failoverLoad {
	l := &failoverLoad{stopCh: make(chan struct{}), res: failoverResult{done: map[string][]answeredBatch{}, errors: map[string]int{}}}
	t.Cleanup(func() { l.stop() })
	for _, pool := range pools {
		l.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-l.stopCh:
					return
				default:
				}
				req := batchRequest(pool, fmt.Sprintf("b%d", i), 3)
				deadline := time.Now().Add(30 * time.Second)
				for {
					b, _, err := s.Dispatch(context.Background(), req)
					if err == nil {
						l.mu.Lock()
						l.res.done[pool] = append(l.res.done[pool], answeredBatch{b, time.Now()})
						l.res.batches++
						l.mu.Unlock()
						break
					}
					if !wouldRetry(err) || time.Now().After(deadline) {
						t.Errorf("dispatch %s in %s: %v", req.BatchID, pool, err)
						return
					}
					l.mu.Lock()
					l.res.errors[failureKind(err)]++
					l.mu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	return l
}

func failureKind(err error) string {
	var ind *dispatch.IndeterminateError
	if errors.As(err, &ind) {
		return "indeterminate"
	}
	return "unavailable"
}

// waitSuccessAfter waits until a batch of pool is answered after since, or
// fails t after a bound.
func (l *failoverLoad) waitSuccessAfter(t *testing.T, pool string, since time.Time) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		d := l.res.done[pool]
		ok := len(d) > 0 && d[len(d)-1].at.After(since)
		l.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pool %s: no batch answered within 30s", pool)
}

func (l *failoverLoad) stop() failoverResult {
	l.once.Do(func() { close(l.stopCh) })
	l.wg.Wait()
	return l.res
}

// outage is the time between the last batch of pool answered before at and
// the first one after.
func (r failoverResult) outage(pool string, at time.Time) time.Duration {
	d := r.done[pool]
	i, _ := slices.BinarySearchFunc(d, at, func(b answeredBatch, at time.Time) int { return b.at.Compare(at) })
	if i == 0 || i == len(d) {
		return 0
	}
	return d[i].at.Sub(d[i-1].at)
}

func nodeWithAddr(t testing.TB, nodes []*redistest.Server, addr string) *redistest.Server {
	t.Helper()
	for _, n := range nodes {
		if n.Addr() == addr {
			return n
		}
	}
	t.Fatalf("no node at %s", addr)
	return nil
}

// replicaOf returns the node that replicates primary.
func replicaOf(t testing.TB, nodes []*redistest.Server, primary *redistest.Server) *redistest.Server {
	t.Helper()
	for _, n := range nodes {
		c := goredis.NewClient(&goredis.Options{Addr: n.Addr()})
		info, err := c.Info(context.Background(), "replication").Result()
		_ = c.Close()
		if err == nil && strings.Contains(info, fmt.Sprintf("master_port:%d\r", primary.Port())) {
			return n
		}
	}
	t.Fatalf("no replica of %s", primary.Addr())
	return nil
}

// waitRole waits until s has role ("master" or "slave"), or fails t.
func waitRole(t testing.TB, s *redistest.Server, role string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.Role(t) != role {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after 30s", s.Addr(), role)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
