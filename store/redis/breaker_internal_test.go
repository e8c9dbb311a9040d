package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
)

// replyErr is an error reply of Redis, as goredis.Error sees one.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ goredis.Error = replyErr("")

// TestBreakerStates: three timeouts in a row open the breaker, an answer in
// between resets the count, an open breaker lets one probe through per
// breakerProbe, and an answer to it (an error reply counts) closes it.
func TestBreakerStates(t *testing.T) {
	timeout := fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	reply := replyErr("ERR something")
	b := newBreaker()
	t0 := time.Unix(1000, 0)
	send := func(at time.Duration, err error) (ok bool) {
		t.Helper()
		ok, probe := b.allow(t0.Add(at))
		if ok {
			b.done(t0.Add(at), probe, err)
		}
		return ok
	}
	for i, step := range []struct {
		at   time.Duration
		err  error
		want bool // sent
	}{
		{0, timeout, true},
		{1, timeout, true},
		{2, nil, true}, // an answer: the count starts again
		{3, timeout, true},
		{4, timeout, true},
		{5, context.Canceled, true}, // says nothing either way
		{6, timeout, true},          // the third in a row: open
		{7, nil, false},
		{breakerProbe / 2, nil, false},
		{breakerProbe + 6, timeout, true}, // the probe, and it times out
		{breakerProbe + 7, nil, false},
		{2*breakerProbe + 6, reply, true}, // the next probe gets an answer
		{2*breakerProbe + 7, nil, true},   // closed
	} {
		if got := send(step.at, step.err); got != step.want {
			t.Fatalf("step %d at %v: sent %v, want %v (fails %d, open %v)", i, step.at, got, step.want, b.fails, b.open)
		}
	}
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "b"}
	if err := dispatchFailure(context.Background(), ErrNotAnswering, req); !errors.Is(err, dispatch.ErrNotSent) {
		t.Errorf("a dispatch held back: %v, want dispatch.ErrNotSent", err)
	}
}

// TestBreakerProbePanics: a probe that panics below the hook does not keep
// the breaker from probing again.
func TestBreakerProbePanics(t *testing.T) {
	defer SetBreakerProbe(time.Millisecond)()
	b := newBreaker()
	for range breakerTrips {
		b.done(time.Now(), false, context.DeadlineExceeded)
	}
	cmd := func() goredis.Cmder { return goredis.NewCmd(context.Background(), "get", "k") }
	boom := b.ProcessHook(func(context.Context, goredis.Cmder) error { panic("boom") })
	time.Sleep(2 * time.Millisecond)
	func() {
		defer func() { _ = recover() }()
		_ = boom(context.Background(), cmd())
	}()
	answers := b.ProcessHook(func(context.Context, goredis.Cmder) error { return nil })
	time.Sleep(2 * time.Millisecond)
	if err := answers(context.Background(), cmd()); err != nil {
		t.Fatalf("after a probe panicked, a command Redis answers: %v", err)
	}
	if !b.calm.Load() {
		t.Error("the answer did not close the breaker")
	}
}

// TestBreakerCallerDeadlines: failures after the caller's own context ended
// do not count, and a command held back after an earlier attempt of it was
// sent (a Cluster client's retry) is not ErrNotAnswering.
func TestBreakerCallerDeadlines(t *testing.T) {
	b := newBreaker()
	timesOut := b.ProcessHook(func(ctx context.Context, _ goredis.Cmder) error {
		<-ctx.Done()
		return fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	})
	for range 2 * breakerTrips {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_ = timesOut(ctx, goredis.NewCmd(ctx, "ping"))
		cancel()
	}
	if !b.calm.Load() {
		t.Fatal("timeouts of callers' own deadlines opened the breaker")
	}
	for range breakerTrips {
		b.done(time.Now(), false, context.DeadlineExceeded)
	}
	sent := new(atomic.Bool)
	ctx := context.WithValue(context.Background(), sentKey{}, sent)
	if err := heldBack(ctx); !errors.Is(err, ErrNotAnswering) {
		t.Errorf("held back before any attempt: %v, want ErrNotAnswering", err)
	}
	markSent(ctx)
	err := heldBack(ctx)
	if errors.Is(err, ErrNotAnswering) || !errors.Is(err, ErrHeldBack) || notSent(err) {
		t.Errorf("held back after an attempt was sent: %v, want ErrHeldBack, not 'not sent'", err)
	}
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "b"}
	if _, ind := errors.AsType[*dispatch.IndeterminateError](dispatchFailure(ctx, err, req)); !ind {
		t.Errorf("a dispatch held back after an attempt was sent is not indeterminate")
	}
}
