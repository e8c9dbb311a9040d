package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// ledger is what a service answered: every write acknowledged and every
// state a read showed, to hold against what survives a failover.
type ledger struct {
	mu         sync.Mutex
	dispatched map[string]string // order → compId, answered 201
	completed  map[string]bool   // answered 200
	cancelled  map[string]bool   // answered 200
	scales     map[string]bool   // Scales answered 201
	shown      map[string]dispatch.OrderState
	shownScale map[string]bool // Scales a list showed
}

func newLedger() *ledger {
	return &ledger{dispatched: map[string]string{}, completed: map[string]bool{}, cancelled: map[string]bool{},
		scales: map[string]bool{}, shown: map[string]dispatch.OrderState{}, shownScale: map[string]bool{}}
}

// recorder is a service whose answers go into a ledger.
type recorder struct {
	svc *dispatch.Service
	l   *ledger
}

func (r recorder) dispatch(ctx context.Context, ids ...string) error {
	in := dispatch.DispatchInput{Pool: "p"}
	for _, id := range ids {
		in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
	}
	b, _, err := r.svc.Dispatch(ctx, in)
	if err == nil {
		r.l.mu.Lock()
		for _, a := range b.Assignments {
			r.l.dispatched[a.OrderID] = a.CompID
		}
		r.l.mu.Unlock()
	}
	return err
}

func (r recorder) complete(ctx context.Context, id string) error {
	_, err := r.svc.CompleteOrder(ctx, "p", id, 0)
	if err == nil {
		r.l.mu.Lock()
		r.l.completed[id] = true
		r.l.mu.Unlock()
	}
	return err
}

func (r recorder) cancel(ctx context.Context, id string) error {
	_, err := r.svc.CancelOrder(ctx, "p", id)
	if err == nil {
		r.l.mu.Lock()
		r.l.cancelled[id] = true
		r.l.mu.Unlock()
	}
	return err
}

func (r recorder) putScale(ctx context.Context, id string) error {
	_, _, err := r.svc.PutScale(ctx, "p", id, dispatch.ScaleSpec{})
	if err == nil {
		r.l.mu.Lock()
		r.l.scales[id] = true
		r.l.mu.Unlock()
	}
	return err
}

func (r recorder) read(ctx context.Context, id string) (dispatch.Order, error) {
	o, err := r.svc.GetOrder(ctx, "p", id)
	if err == nil {
		r.l.mu.Lock()
		if o.State != dispatch.Assigned {
			r.l.shown[id] = o.State
		} else if _, ok := r.l.shown[id]; !ok {
			r.l.shown[id] = o.State
		}
		r.l.mu.Unlock()
	}
	return o, err
}

func (r recorder) listScales(ctx context.Context) error {
	scales, _, err := r.svc.ListScales(ctx, "p", dispatch.Page{Limit: dispatch.MaxLimit})
	if err == nil {
		r.l.mu.Lock()
		for _, s := range scales {
			r.l.shownScale[s.CompID] = true
		}
		r.l.mu.Unlock()
	}
	return err
}

// lost lists what the ledger holds that the store after a failover does
// not: acknowledged writes undone, and states shown that are gone.
func (l *ledger) lost(t *testing.T, s dispatch.Store) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	state := func(id string) (dispatch.Order, bool) {
		o, err := s.GetOrder(ctx, "p", id, time.Now())
		if errors.Is(err, dispatch.ErrOrderNotFound) {
			return o, false
		}
		if err != nil {
			t.Fatalf("GetOrder %s after the failover: %v", id, err)
		}
		return o, true
	}
	for id, comp := range l.dispatched {
		if o, ok := state(id); !ok || o.CompID != comp {
			out = append(out, fmt.Sprintf("dispatch of %s to %s (now %+v, %v)", id, comp, o, ok))
		}
	}
	for id := range l.completed {
		if o, _ := state(id); o.State != dispatch.Completed {
			out = append(out, fmt.Sprintf("complete of %s (now %s)", id, o.State))
		}
	}
	for id := range l.cancelled {
		if o, _ := state(id); o.State != dispatch.Cancelled {
			out = append(out, fmt.Sprintf("cancel of %s (now %s)", id, o.State))
		}
	}
	for id, st := range l.shown {
		if o, ok := state(id); !ok || (st != dispatch.Assigned && o.State != st) {
			out = append(out, fmt.Sprintf("read of %s showing it %s (now %s, %v)", id, st, o.State, ok))
		}
	}
	for id := range l.scales {
		if _, err := s.GetScale(ctx, "p", id); err != nil {
			out = append(out, fmt.Sprintf("PUT of Scale %s (now %v)", id, err))
		}
	}
	for id := range l.shownScale {
		if _, err := s.GetScale(ctx, "p", id); err != nil {
			out = append(out, fmt.Sprintf("list showing Scale %s (now %v)", id, err))
		}
	}
	return out
}

// TestWaitSentinelFailover reproduces issue 23 with real Sentinel: a
// primary (min-replicas-to-write 1), one replica, three sentinels, in
// lagFailover. It takes about 10 s.
func TestWaitSentinelFailover(t *testing.T) {
	primary := redistest.StartWith(t, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
	link := redistest.NewLagLink(t, primary.Addr())
	replica := redistest.StartReplica(t, primary, "--replicaof", "127.0.0.1", strconv.Itoa(link.Port()))
	sentinels := redistest.StartSentinels(t, 3, 2, "dispatch", link.Port(), 1)
	url := fmt.Sprintf("redis://%s/0?master_name=dispatch", sentinels[0].Addr())
	lagFailover(t, func(o redis.Options) dispatch.Store { return redis.New(dialClient(t, url, "sentinel"), o) },
		link, primary, replica)
}

// lagFailover runs the case: the replica falls behind while it
// stays connected and acknowledges a stale offset (its stream held by
// link), then the primary is SIGKILLed and the held stream thrown away, so
// that the promoted replica lacks everything of the lag. Through a service
// with WaitReplicas 1, clients dispatch, complete, cancel, register Scales
// and read all along; a service without WAIT completes, dispatches and
// reads during the lag too. store makes a Store on the deployment.
//
// After the failover, every write the waiting service acknowledged, of
// every kind, is on the new primary, and every state its reads showed is
// still there; the service without WAIT lost its acknowledged complete
// and batch and showed a state that is gone, which shows the test can see
// a loss.
func lagFailover(t *testing.T, store func(redis.Options) dispatch.Store, link *redistest.LagLink, primary, replica *redistest.Server) {
	ctx := context.Background()
	waiting := recorder{dispatch.NewService(store(redis.Options{WaitReplicas: 1, WaitTimeout: time.Second}), dispatch.Config{}), newLedger()}
	plain := recorder{dispatch.NewService(store(redis.Options{}), dispatch.Config{}), newLedger()}
	if err := replicated(func() error { _, _, err := waiting.svc.PutPool(ctx, "p", dispatch.PoolSpec{}); return err }); err != nil {
		t.Fatalf("PutPool: %v", err)
	}
	for _, id := range []string{"A", "B", "C"} {
		if err := replicated(func() error { return waiting.putScale(ctx, id) }); err != nil {
			t.Fatalf("PutScale %s: %v", id, err)
		}
	}
	if err := waiting.dispatch(ctx, "o1", "o2", "o3", "o4"); err != nil {
		t.Fatalf("dispatch: %v", err)
	}

	// The load: four clients of the waiting service, from before the lag
	// until after the failover.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			var mine []string
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", c, i)
				switch {
				case i%5 == 0 || len(mine) < 2:
					if waiting.dispatch(ctx, id+"a", id+"b") == nil {
						mine = append(mine, id+"a", id+"b")
					}
				case i%5 == 1:
					_ = waiting.complete(ctx, mine[0])
					mine = mine[1:]
				case i%5 == 2:
					_ = waiting.cancel(ctx, mine[0])
					mine = mine[1:]
				case i%5 == 3:
					_, _ = waiting.read(ctx, mine[len(mine)-1])
					_ = waiting.listScales(ctx)
				default:
					if i%25 == 4 {
						_ = waiting.putScale(ctx, "W"+id)
					}
					_, _ = waiting.read(ctx, mine[0])
				}
			}
		})
	}
	// Until it has acknowledged each kind it checks: a client's first
	// cancel is its eighth call, each waiting for a WAIT, and a loaded
	// machine (a load average of 20) took more than the half second this
	// once slept for (0 cancels in 2 runs of 8).
	if !waitFor(30*time.Second, func() bool {
		l := waiting.l
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.completed) > 0 && len(l.cancelled) > 0 && len(l.shown) > 0 && len(l.shownScale) > 0
	}) {
		t.Fatal("the load acknowledged no complete, cancel, read or list of Scales in 30s")
	}

	link.Hold()
	time.Sleep(200 * time.Millisecond)
	// The smallest case, through the waiting service, at once: none
	// of it is acknowledged, nor shown by a read.
	cases := map[string]func() error{
		"complete o1":  func() error { return waiting.complete(ctx, "o1") },
		"cancel o2":    func() error { return waiting.cancel(ctx, "o2") },
		"PUT Scale D":  func() error { return waiting.putScale(ctx, "D") },
		"dispatch o5":  func() error { return waiting.dispatch(ctx, "o5") },
		"list Scales":  func() error { return waiting.listScales(ctx) },
		"read o1 back": func() error { _, err := waiting.read(ctx, "o1"); return err },
	}
	var cwg sync.WaitGroup
	for name, f := range cases {
		cwg.Go(func() {
			if err := f(); !errors.Is(err, dispatch.ErrNotReplicated) {
				t.Errorf("%s with the replica behind: %v, want ErrNotReplicated", name, err)
			}
		})
	}
	cwg.Wait()
	// And through the service without WAIT: acknowledged and shown.
	if err := plain.complete(ctx, "o3"); err != nil {
		t.Fatalf("complete o3 without WAIT: %v", err)
	}
	if err := plain.dispatch(ctx, "o6"); err != nil {
		t.Fatalf("dispatch o6 without WAIT: %v", err)
	}
	if o, err := plain.read(ctx, "o3"); err != nil || o.State != dispatch.Completed {
		t.Fatalf("read o3 without WAIT: %+v, %v", o, err)
	}

	primary.Kill()
	link.Cut()
	killed := time.Now()
	waitRole(t, replica, "master")
	t.Logf("replica promoted %s after the kill", time.Since(killed).Round(time.Millisecond))
	time.Sleep(time.Second) // the load runs on against the new primary
	close(stop)
	wg.Wait()

	after := newStore(t, replica, redis.Options{})
	l := waiting.l
	t.Logf("the waiting service acknowledged %d dispatched orders, %d completes, %d cancels, %d Scales; its reads showed %d orders, %d Scales",
		len(l.dispatched), len(l.completed), len(l.cancelled), len(l.scales), len(l.shown), len(l.shownScale))
	if len(l.completed) == 0 || len(l.cancelled) == 0 || len(l.shown) == 0 {
		t.Errorf("the load acknowledged too little to check: %d completes, %d cancels, %d reads", len(l.completed), len(l.cancelled), len(l.shown))
	}
	if lost := l.lost(t, after); len(lost) > 0 {
		t.Errorf("with WAIT, the failover undid %d answers: %v", len(lost), lost)
	}
	lostPlain := plain.l.lost(t, after)
	t.Logf("without WAIT, the failover undid %d answers: %v", len(lostPlain), lostPlain)
	if len(lostPlain) != 3 {
		t.Errorf("without WAIT: %d answers undone, want 3 (the complete and read of o3, the dispatch of o6): the lag did not hold", len(lostPlain))
	}
	outstandingMatches(t, after, "p")
}

// outstandingMatches checks that every Scale of pool counts as outstanding
// exactly the assigned orders it holds.
func outstandingMatches(t *testing.T, s dispatch.Store, pool string) {
	t.Helper()
	ctx := context.Background()
	scales, _, err := s.ListScales(ctx, pool, dispatch.Page{Limit: dispatch.MaxLimit})
	if err != nil {
		t.Fatalf("ListScales: %v", err)
	}
	for _, sc := range scales {
		var n int64
		p := dispatch.Page{Limit: dispatch.MaxLimit}
		for {
			os, next, err := s.ListScaleOrders(ctx, pool, sc.CompID, p)
			if err != nil {
				t.Fatalf("ListScaleOrders %s: %v", sc.CompID, err)
			}
			for _, o := range os {
				if o.State == dispatch.Assigned && o.CompID == sc.CompID {
					n++
				}
			}
			if next == "" {
				break
			}
			p.Cursor = next
		}
		if n != sc.Outstanding {
			t.Errorf("Scale %s after the failover: outstanding %d, but %d assigned orders", sc.CompID, sc.Outstanding, n)
		}
	}
}

// TestWaitClusterFailover runs lagFailover on a Redis Cluster of three
// primaries with a replica each: the primary of pool p's slot announces
// itself at a LagLink (cluster-announce-port), so that its replica
// replicates through the link, and the Cluster, not Sentinel, promotes the
// replica once the primary is killed (cluster-node-timeout). It takes
// about 15 s.
func TestWaitClusterFailover(t *testing.T) {
	nodes := redistest.StartClusterReplicas(t, 3, 1, 3*time.Second)
	url := redistest.ClusterURL(nodes)
	cc := dialClient(t, url, "cluster").(*goredis.ClusterClient)
	m, err := cc.MasterForKey(context.Background(), "dispatch:{pool:p}:meta")
	if err != nil {
		t.Fatal(err)
	}
	primary := nodeWithAddr(t, nodes, m.Options().Addr)
	replica := replicaOf(t, nodes, primary)
	link := redistest.NewLagLink(t, primary.Addr())
	pc := goredis.NewClient(&goredis.Options{Addr: primary.Addr()})
	defer pc.Close()
	// The bus keeps its port; the replica learns the new address by gossip
	// and replicates from there.
	for _, kv := range [][2]string{{"cluster-announce-bus-port", strconv.Itoa(primary.Port() + 10000)}, {"cluster-announce-port", strconv.Itoa(link.Port())}} {
		if err := pc.ConfigSet(context.Background(), kv[0], kv[1]).Err(); err != nil {
			t.Fatalf("CONFIG SET %s: %v", kv[0], err)
		}
	}
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if !waitFor(20*time.Second, func() bool {
		info, err := rc.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, fmt.Sprintf("master_port:%d\r", link.Port())) && strings.Contains(info, "master_link_status:up")
	}) {
		t.Fatalf("replica %s does not replicate through the link at %s", replica.Addr(), link.Addr())
	}
	lagFailover(t, func(o redis.Options) dispatch.Store { return redis.New(dialClient(t, url, "cluster"), o) },
		link, primary, replica)
}
