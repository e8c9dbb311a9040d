package redis_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// beforeDial is a go-redis hook that runs its function once, when armed,
// before the client dials: between a run whose reply was lost and the
// re-send, which needs a new connection.
type beforeDial struct {
	armed atomic.Bool
	run   func()
}

func (h *beforeDial) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.armed.CompareAndSwap(true, false) {
			h.run()
		}
		return next(ctx, network, addr)
	}
}

func (h *beforeDial) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

func (h *beforeDial) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// resendService is a Service whose client (one connection) reaches srv
// through a proxy that can lose replies, with the hook h, and a second
// Service on a direct client, which it returns too.
func resendService(t *testing.T, h *beforeDial) (*redistest.Proxy, *dispatch.Service, *dispatch.Service, goredis.UniversalClient) {
	t.Helper()
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "fcall")
	c := dialClient(t, px.URL()+"?pool_size=1", "single")
	c.AddHook(h)
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	direct := newClient(t, srv)
	other := dispatch.NewService(redis.New(direct, redis.Options{}), dispatch.Config{})
	warmUp(t, svc)
	return px, svc, other, direct
}

// TestResentCallAfterOthers: a call that go-redis re-sends after many
// other calls of its pool have run (at a read timeout under load) still
// answers as its first run: the completions it made.
func TestResentCallAfterOthers(t *testing.T) {
	h := &beforeDial{}
	px, svc, other, direct := resendService(t, h)
	ctx := context.Background()
	mustPool(t, svc, "p", "A")
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("o-%d", i))
	}
	in := dispatch.DispatchInput{Pool: "p"}
	for _, id := range ids {
		in.Orders = append(in.Orders, dispatch.OrderInput{ID: id})
	}
	if _, _, err := svc.Dispatch(ctx, in); err != nil {
		t.Fatal(err)
	}
	h.run = func() {
		// 30 calls of the pool, each with a reply to keep, between the
		// first run and the re-send
		for _, id := range ids[10:] {
			if _, err := other.Complete(ctx, "p", []dispatch.Completion{{OrderID: id}}); err != nil {
				t.Errorf("Complete %s: %v", id, err)
			}
		}
	}
	h.armed.Store(true)
	px.DropNext(1)
	runs := fcallCalls(t, direct)
	n, err := svc.Complete(ctx, "p", []dispatch.Completion{{OrderID: "o-0"}, {OrderID: "o-1"}, {OrderID: "o-2"}})
	if err != nil {
		t.Fatal(err)
	}
	// the call ran twice, with the 30 others between
	if ran := fcallCalls(t, direct) - runs; px.Dropped() != 1 || h.armed.Load() || ran != 32 {
		t.Fatalf("replies lost %d, hook armed %v, scripts run %d: want 1, false, 32 (the call twice, 30 others between)",
			px.Dropped(), h.armed.Load(), ran)
	}
	if n != 3 {
		t.Errorf("Complete answered %d completed, want 3 (its first run's answer)", n)
	}
}

// TestResentReassign: a reassign whose reply was lost answers, when
// go-redis re-sends it, with the moves of its first run, not with the
// nothing left to move.
func TestResentReassign(t *testing.T) {
	h := &beforeDial{}
	px, svc, _, direct := resendService(t, h)
	ctx := context.Background()
	down := dispatch.Down
	// Redis loads the library first: a "Function not found" answer would be the
	// reply lost.
	mustPool(t, svc, "q", "X")
	if _, _, err := svc.PutScale(ctx, "q", "X", dispatch.ScaleSpec{State: &down}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reassign(ctx, "q", "X"); err != nil {
		t.Fatal(err)
	}
	mustPool(t, svc, "p", "A", "B", "C")
	in := dispatch.DispatchInput{Pool: "p"}
	for i := range 30 {
		in.Orders = append(in.Orders, dispatch.OrderInput{ID: fmt.Sprintf("o-%d", i)})
	}
	if _, _, err := svc.Dispatch(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.PutScale(ctx, "p", "A", dispatch.ScaleSpec{State: &down}); err != nil {
		t.Fatal(err)
	}
	px.DropNext(1)
	runs := fcallCalls(t, direct)
	moved, err := svc.Reassign(ctx, "p", "A")
	if err != nil {
		t.Fatal(err)
	}
	if ran := fcallCalls(t, direct) - runs; px.Dropped() != 1 || ran != 2 {
		t.Fatalf("replies lost %d, scripts run %d; want 1, 2", px.Dropped(), ran)
	}
	if len(moved) != 10 {
		t.Errorf("Reassign answered %d moves, want the 10 orders A held", len(moved))
	}
	for _, m := range moved {
		if m.CompID != "B" && m.CompID != "C" {
			t.Errorf("order %s moved to %s", m.OrderID, m.CompID)
		}
	}
}
