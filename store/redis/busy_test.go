package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// busyServer starts a Redis that answers BUSY to everything else once a
// script has run for 50 ms, and returns it with a client of NewClient
// whose read timeout is readTimeout.
func busyServer(t *testing.T, readTimeout string) (*redistest.Server, goredis.UniversalClient) {
	t.Helper()
	srv := redistest.Start(t)
	c := dialClient(t, srv.URL()+"?read_timeout="+readTimeout, "single")
	if err := c.ConfigSet(context.Background(), "busy-reply-threshold", "50").Err(); err != nil {
		t.Fatalf("CONFIG SET busy-reply-threshold: %v", err)
	}
	return srv, c
}

// TestBusyScriptIsWaitedOut: while another client's script keeps Redis
// busy past its threshold, a client without the hook is answered BUSY,
// and a dispatch, and then a pipeline, through NewClient's client wait and
// succeed.
func TestBusyScriptIsWaitedOut(t *testing.T) {
	srv, c := busyServer(t, "3s")
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	mustPool(t, svc, "p", "A", "B")
	ctx := context.Background()

	raw := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = raw.Close() })
	plain := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = plain.Close() })
	// spin keeps Redis busy for 800 ms of its own clock, and returns once a
	// plain client is answered BUSY, with that answer and the script's end.
	spin := func() (string, chan error) {
		t.Helper()
		spun := make(chan error, 1)
		go func() {
			spun <- raw.Eval(ctx, `local a = redis.call('TIME')
repeat local b = redis.call('TIME') until (b[1] - a[1]) * 1e6 + (b[2] - a[2]) > 800000
return 1`, nil).Err()
		}()
		var busy error
		if !waitFor(5*time.Second, func() bool { busy = plain.Ping(ctx).Err(); return busy != nil }) {
			t.Fatal("Redis never answered BUSY while the script ran")
		}
		return busy.Error(), spun
	}

	busy, spun := spin()
	b, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}})
	if err != nil {
		t.Fatalf("Dispatch while Redis was busy (a plain client got %s): %v", busy, err)
	}
	if len(b.Assignments) != 1 {
		t.Fatalf("got %d assignments, want 1", len(b.Assignments))
	}
	if err := <-spun; err != nil {
		t.Fatalf("the busy script: %v", err)
	}

	busy, spun = spin()
	var get *goredis.StringCmd
	if _, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		get = p.Get(ctx, "k")
		return nil
	}); err != nil || get.Val() != "v" {
		t.Fatalf("a pipeline while Redis was busy (a plain client got %s): %q, %v", busy, get.Val(), err)
	}
	if err := <-spun; err != nil {
		t.Fatalf("the busy script: %v", err)
	}
}

// TestLongDispatchOutlastsReadTimeout: a dispatch whose script runs past
// the client's read timeout and Redis's busy threshold (a cost-capped batch
// of a strategy that reads every Scale per order) is sent again by go-redis
// after the timeout, answered BUSY, sent again until the first run ends,
// and answers with the batch that run recorded, once. The read timeout,
// 200 ms, is well below the time the script runs (0.8–1 s on a loaded
// two-core machine, logged), and twice what the send that finds the batch
// recorded (its reply holds 10,000 assignments) may take there: at 100 ms
// that send too timed out once, every time go-redis tried it.
func TestLongDispatchOutlastsReadTimeout(t *testing.T) {
	_, c := busyServer(t, "200ms")
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	ctx := context.Background()
	swrr := dispatch.SmoothWeightedRoundRobin
	if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &swrr}); err != nil {
		t.Fatal(err)
	}
	const scales, orders = 1000, 10000 // 10^7: the cap, and seconds of Lua
	ids := make([]string, scales)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%04d", i)
	}
	putScales(t, svc, "p", ids)
	in := dispatch.DispatchInput{Pool: "p", Orders: make([]dispatch.OrderInput, orders)}
	for i := range in.Orders {
		in.Orders[i].ID = fmt.Sprintf("o-%d", i)
	}
	// one order first, so that Redis has the library before the count
	if _, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "w"}}}); err != nil {
		t.Fatal(err)
	}
	fcalls, rejected := commandStat(t, c, "calls", "fcall"), commandStat(t, c, "rejected_calls", "fcall")

	start := time.Now()
	b, replayed, err := svc.Dispatch(ctx, in)
	t.Logf("the dispatch took %v", time.Since(start))
	if err != nil || replayed {
		t.Fatalf("Dispatch: replayed %v, %v; want false, nil", replayed, err)
	}
	if len(b.Assignments) != orders {
		t.Fatalf("got %d assignments, want %d", len(b.Assignments), orders)
	}
	// The path under test ran: Redis refused at least one send as BUSY and
	// ran the function at least twice, the batch and then a send that found
	// it recorded (a loaded machine may time out that send's reply too and
	// send once more: applied once all the same, as the count below says).
	if n := commandStat(t, c, "rejected_calls", "fcall") - rejected; n < 1 {
		t.Errorf("Redis refused %d FCALLs as BUSY, want at least 1", n)
	}
	if n := commandStat(t, c, "calls", "fcall") - fcalls; n < 2 {
		t.Errorf("Redis ran %d FCALLs, want at least 2 (the batch and a send that found it recorded)", n)
	}
	list, _, err := svc.ListScales(ctx, "p", dispatch.Page{Limit: scales})
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, s := range list {
		total += s.Outstanding
	}
	if total != orders+1 {
		t.Errorf("the Scales hold %d outstanding orders, want %d (applied once)", total, orders+1)
	}
}
