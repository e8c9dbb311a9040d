package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// moveCounter is a dispatch.HealthObserver that counts what one replica
// was told.
type moveCounter struct {
	mu      sync.Mutex
	moved   map[dispatch.MoveReason]int
	changes []dispatch.HealthChange
}

func (m *moveCounter) HealthChanged(c dispatch.HealthChange) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.changes = append(m.changes, c)
}

func (m *moveCounter) OrdersMoved(_ string, reason dispatch.MoveReason, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.moved == nil {
		m.moved = map[dispatch.MoveReason]int{}
	}
	m.moved[reason] += n
}

func (m *moveCounter) ChangesDropped(string, int) {}

// replicaSet is n Services, each with its own client and Store on one
// Redis, as n dispatcher processes would be.
type replicaSet struct {
	svcs []*dispatch.Service
	obs  []*moveCounter
}

func newReplicas(t testing.TB, srv *redistest.Server, n int) *replicaSet {
	t.Helper()
	r := &replicaSet{}
	for range n {
		o := &moveCounter{}
		r.obs = append(r.obs, o)
		r.svcs = append(r.svcs, dispatch.NewService(newStore(t, srv, redis.Options{}), dispatch.Config{Health: o}))
	}
	return r
}

// moved sums the orders every replica was told moved for reason.
func (r *replicaSet) moved(reason dispatch.MoveReason) int {
	n := 0
	for _, o := range r.obs {
		o.mu.Lock()
		n += o.moved[reason]
		o.mu.Unlock()
	}
	return n
}

// TestLapseAcrossReplicas runs three replicas on one Redis, each ticking
// once a second, under continuous single-order dispatches through all of
// them, with five Scales that heartbeat every 200 ms. One Scale stops:
// after its lease ends no dispatch gives it an order, every replica shows
// it lapsed, and (onLapse reassign) every order it held moves once, by the
// ticks alone, within heartbeatTimeout + 2 s of its last heartbeat. No
// order is lost or doubled, and every Scale's outstanding is the number of
// its orders. It heartbeats again: up on every replica, warming up anew.
func TestLapseAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	rs := newReplicas(t, srv, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timeout, reassign, slow := time.Second, dispatch.ReassignLapsed, 10*time.Second
	if _, _, err := rs.svcs[0].PutPool(ctx, "p", dispatch.PoolSpec{HeartbeatTimeout: &timeout, OnLapse: &reassign, SlowStart: &slow}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"A", "B", "C", "D", "E"}
	for i, id := range ids {
		base := int64(i * 3)
		if _, _, err := rs.svcs[i%3].PutScale(ctx, "p", id, dispatch.ScaleSpec{OrderCount: &base}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, svc := range rs.svcs {
		wg.Go(func() { svc.RunHealth(ctx, time.Second, func(err error) { t.Errorf("tick: %v", err) }) })
	}

	// Heartbeats every 200 ms through the replicas in turn; C's stop when
	// stopC closes, and lastC keeps the time of its last one.
	stopC, resumeC := make(chan struct{}), make(chan struct{})
	var lastC atomic.Int64
	for i, id := range ids {
		wg.Go(func() {
			stop := stopC
			if id != "C" {
				stop = nil
			}
			for k := i; ctx.Err() == nil; k++ {
				if stop != nil {
					select {
					case <-stop:
						select {
						case <-resumeC:
						case <-ctx.Done():
							return
						}
						stop = nil
					default:
					}
				}
				sc, err := rs.svcs[k%3].Heartbeat(ctx, "p", id, nil)
				if err != nil && ctx.Err() == nil {
					t.Errorf("heartbeat %s: %v", id, err)
					return
				}
				if id == "C" && err == nil {
					lastC.Store(sc.LastHeartbeatAt.UnixMilli())
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}

	// Dispatches: each replica sends single-order batches without a pause.
	type sent struct {
		comp string
		at   time.Time
	}
	var mu sync.Mutex
	orders := map[string]sent{}
	var seq atomic.Int64
	var stopped atomic.Bool
	stopLoad := func() { stopped.Store(true) }
	var load sync.WaitGroup
	for _, svc := range rs.svcs {
		load.Go(func() {
			// (stopped between calls, so that no dispatch is left unanswered)
			for !stopped.Load() {
				id := fmt.Sprintf("o%d", seq.Add(1))
				b, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: id}}})
				if err != nil {
					t.Errorf("dispatch %s: %v", id, err)
					return
				}
				mu.Lock()
				orders[id] = sent{b.Assignments[0].CompID, b.CreatedAt}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}

	time.Sleep(1500 * time.Millisecond)
	close(stopC)
	// C's heartbeat loop may be inside one call: wait for it to settle.
	time.Sleep(300 * time.Millisecond)
	leaseEnd := time.UnixMilli(lastC.Load()).Add(timeout)
	time.Sleep(time.Until(leaseEnd))
	for i, svc := range rs.svcs {
		sc, err := svc.GetScale(ctx, "p", "C")
		if err != nil || sc.Health != dispatch.Lapsed {
			t.Errorf("replica %d, at the lease's end: C %+v, %v; want lapsed", i, sc, err)
		}
	}
	// The ticks alone empty C.
	deadline := leaseEnd.Add(2 * time.Second)
	var emptyAt time.Time
	for {
		sc, err := rs.svcs[1].GetScale(ctx, "p", "C")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Outstanding == 0 {
			emptyAt = time.Now()
			break
		}
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("C still holds %d orders 7 s after its lease ended", sc.Outstanding)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("C lapsed at %s; its orders had all moved %s later", leaseEnd.Format(time.StampMilli), emptyAt.Sub(leaseEnd))
	if emptyAt.After(deadline) {
		t.Errorf("C emptied %s after its last heartbeat, want within heartbeatTimeout + 2 s", emptyAt.Sub(leaseEnd.Add(-timeout)))
	}
	stopLoad()
	load.Wait()

	// Where every order stands now.
	mu.Lock()
	defer mu.Unlock()
	held := 0
	for id, s := range orders {
		if s.comp == "C" {
			held++
			if !s.at.Before(leaseEnd) {
				t.Errorf("order %s went to C at %s, after its lease ended at %s", id, s.at.Format(time.StampMilli), leaseEnd.Format(time.StampMilli))
			}
		}
	}
	if held == 0 {
		t.Fatalf("C got no order before it lapsed: the test shows nothing")
	}
	perScale := map[string]int64{}
	for id, s := range orders {
		o, err := rs.svcs[2].GetOrder(ctx, "p", id)
		if err != nil {
			t.Fatalf("GetOrder %s: %v", id, err)
		}
		wantMoves := int64(0)
		if s.comp == "C" {
			wantMoves = 1
		}
		if o.State != dispatch.Assigned || o.CompID == "C" || o.Moves != wantMoves {
			t.Errorf("order %s (dispatched to %s): %+v, want assigned off C with %d moves", id, s.comp, o, wantMoves)
		}
		perScale[o.CompID]++
	}
	if got := rs.moved(dispatch.MovedLapse); got != held {
		t.Errorf("the replicas were told of %d lapse moves, C held %d orders", got, held)
	}
	for i, id := range ids {
		sc, err := rs.svcs[0].GetScale(ctx, "p", id)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Outstanding != perScale[id] || sc.BaseLoad != int64(i*3) || sc.OrderCount() != sc.BaseLoad+perScale[id] {
			t.Errorf("%s: %+v; holds %d orders, baseLoad %d", id, sc, perScale[id], i*3)
		}
	}
	t.Logf("%d orders dispatched, %d to C before it lapsed, all moved once", len(orders), held)

	// C comes back and warms up from its first heartbeat.
	close(resumeC)
	var back dispatch.Scale
	for {
		sc, err := rs.svcs[0].GetScale(ctx, "p", "C")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Health == dispatch.Up {
			back = sc
			break
		}
		if time.Since(emptyAt) > 10*time.Second {
			t.Fatalf("C is %s 10 s after its heartbeats resumed", sc.Health)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, svc := range rs.svcs {
		sc, err := svc.GetScale(ctx, "p", "C")
		if err != nil || sc.Health != dispatch.Up {
			t.Errorf("replica %d: C %+v, %v; want up", i, sc, err)
		}
	}
	if back.ActiveSince.Before(leaseEnd) {
		t.Errorf("C came back active since %s, before it lapsed: no warm-up", back.ActiveSince)
	}
	if w := balancing.SlowStartWeight(100, time.Since(back.ActiveSince).Milliseconds(), slow.Milliseconds()); w >= 100 {
		t.Errorf("C's weight 100 is %d right after it came back, want it warming up", w)
	}
	cancel()
}

// TestEjectAcrossReplicas is the reference scenario of failure reports:
// maxFails 3; three reports against one Scale through three replicas eject
// it for all of them; a fourth report of an order that has moved changes
// nothing.
func TestEjectAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	rs := newReplicas(t, srv, 3)
	ctx := context.Background()
	three := int64(3)
	if _, _, err := rs.svcs[0].PutPool(ctx, "p", dispatch.PoolSpec{MaxFails: &three}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rs.svcs[1].PutScale(ctx, "p", "S", dispatch.ScaleSpec{}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 4 {
		ids = append(ids, fmt.Sprintf("o%d", i))
	}
	in := dispatch.DispatchInput{Pool: "p"}
	for _, id := range ids {
		in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
	}
	if _, _, err := rs.svcs[2].Dispatch(ctx, in); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"T", "U"} {
		if _, _, err := rs.svcs[0].PutScale(ctx, "p", id, dispatch.ScaleSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		r, err := rs.svcs[i].Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: ids[i], CompID: "S", Reason: "connection refused"})
		if err != nil {
			t.Fatalf("report %d via replica %d: %v", i+1, i, err)
		}
		if !r.Moved || !r.Counted || r.Ejected != (i == 2) || r.Order.CompID == "S" || r.Order.Moves != 1 {
			t.Errorf("report %d via replica %d: %+v", i+1, i, r)
		}
	}
	var ejected dispatch.Scale
	for i, svc := range rs.svcs {
		sc, err := svc.GetScale(ctx, "p", "S")
		if err != nil || sc.Health != dispatch.Ejected || sc.Ejections != 1 || sc.EjectedUntil.IsZero() {
			t.Errorf("replica %d: S %+v, %v; want ejected once", i, sc, err)
		}
		ejected = sc
	}
	before, err := rs.svcs[1].GetOrder(ctx, "p", ids[2])
	if err != nil {
		t.Fatal(err)
	}
	r, err := rs.svcs[0].Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: ids[2], CompID: "S"})
	if err != nil || r.Moved || r.Counted || r.Ejected || r.Order != before {
		t.Errorf("a fourth report of %s, which moved: %+v, %v; want it unchanged: %+v", ids[2], r, err, before)
	}
	sc, err := rs.svcs[2].GetScale(ctx, "p", "S")
	if err != nil || sc != ejected {
		t.Errorf("S after the fourth report: %+v, %v; want %+v", sc, err, ejected)
	}
	// The Scale holds one order still; reports of it move it but count
	// nothing while S is ejected.
	r, err = rs.svcs[1].Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: ids[3], CompID: "S"})
	if err != nil || !r.Moved || r.Counted || r.Ejected {
		t.Errorf("a report against ejected S: %+v, %v; want moved, not counted", r, err)
	}
	if got := rs.moved(dispatch.MovedFail); got != 4 {
		t.Errorf("the replicas were told of %d moves for failures, want 4", got)
	}
	// No eligible Scale but the one reported: 409, nothing changes.
	down := dispatch.Down
	for _, id := range []string{"T", "U"} {
		if _, _, err := rs.svcs[0].PutScale(ctx, "p", id, dispatch.ScaleSpec{State: &down}); err != nil {
			t.Fatal(err)
		}
	}
	o, _ := rs.svcs[0].GetOrder(ctx, "p", ids[0])
	if _, err := rs.svcs[2].Fail(ctx, dispatch.FailInput{Pool: "p", OrderID: ids[0], CompID: o.CompID}); !errors.Is(err, dispatch.ErrNoEligibleScale) {
		t.Errorf("a report with no other eligible Scale: %v, want %v", err, dispatch.ErrNoEligibleScale)
	}
	if o2, _ := rs.svcs[1].GetOrder(ctx, "p", ids[0]); o2 != o {
		t.Errorf("order after a refused report: %+v, want %+v", o2, o)
	}
}
