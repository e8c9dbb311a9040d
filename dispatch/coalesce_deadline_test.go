package dispatch_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// waiterCtx is a dispatch.CancelWaiter: a deadline of its own over a
// parent that can be cancelled, as api's request context is. Its Done is
// a context.WithDeadline's, and counts its calls: a request queued for
// its pool's calls must wait on CancelDone instead.
type waiterCtx struct {
	context.Context // the parent
	timed           context.Context
	deadline        time.Time
	dones           *atomic.Int32
}

func newWaiterCtx(t *testing.T, parent context.Context, d time.Duration, dones *atomic.Int32) waiterCtx {
	deadline := time.Now().Add(d)
	timed, cancel := context.WithDeadline(parent, deadline)
	t.Cleanup(cancel)
	return waiterCtx{Context: parent, timed: timed, deadline: deadline, dones: dones}
}

func (c waiterCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c waiterCtx) Done() <-chan struct{}       { c.dones.Add(1); return c.timed.Done() }

// Err tells a passed deadline by the clock, as CancelWaiter asks.
func (c waiterCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}
func (c waiterCtx) CancelDone() <-chan struct{} { return c.Context.Done() }
func (c waiterCtx) Value(key any) any           { return c.Context.Value(key) }

// TestCoalescedCancelWaiter: requests whose contexts are CancelWaiters
// queue behind a held call without waiting on Done, and still leave when
// their deadlines pass, one by one whatever the order they came in,
// unsent (ErrUnavailable) or, once sent in another's call, at once as
// indeterminate; and at once when their parent is cancelled.
func TestCoalescedCancelWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGated()
		svc := serviceOver(g, 0)
		var wg sync.WaitGroup
		var dones atomic.Int32
		errs := map[string]error{}
		var mu sync.Mutex
		send := func(name string, ctx context.Context) {
			wg.Go(func() {
				_, _, err := svc.Dispatch(ctx, dispatch.DispatchInput{Pool: "p", Orders: orders(name, 1)})
				mu.Lock()
				errs[name] = err
				mu.Unlock()
			})
			synctest.Wait()
		}
		returned := func(name string) (error, bool) {
			mu.Lock()
			defer mu.Unlock()
			err, ok := errs[name]
			return err, ok
		}
		notSent := func(name string, cause error) {
			t.Helper()
			err, ok := returned(name)
			if !ok {
				t.Fatalf("%s: still waiting", name)
			}
			if _, ind := errors.AsType[*dispatch.IndeterminateError](err); ind || !errors.Is(err, dispatch.ErrUnavailable) || !errors.Is(err, cause) {
				t.Errorf("%s: got %v, want ErrUnavailable (not indeterminate) and %v", name, err, cause)
			}
		}
		waiting := func(names ...string) {
			t.Helper()
			for _, n := range names {
				if err, ok := returned(n); ok {
					t.Errorf("%s: returned %v, want it waiting", n, err)
				}
			}
		}

		send("first", context.Background()) // held in the store
		send("late", newWaiterCtx(t, context.Background(), 5*time.Second, &dones))
		send("early", newWaiterCtx(t, context.Background(), 2*time.Second, &dones))
		parent, cancel := context.WithCancel(context.Background())
		send("gone", newWaiterCtx(t, parent, time.Minute, &dones))
		send("head", newWaiterCtx(t, context.Background(), time.Minute, &dones))
		send("member", newWaiterCtx(t, context.Background(), 10*time.Second, &dones))

		cancel()
		synctest.Wait()
		notSent("gone", context.Canceled)
		waiting("late", "early", "head", "member")

		time.Sleep(3 * time.Second)
		synctest.Wait()
		notSent("early", context.DeadlineExceeded)
		waiting("late", "head", "member")

		time.Sleep(3 * time.Second)
		synctest.Wait()
		notSent("late", context.DeadlineExceeded)
		waiting("head", "member")

		g.gate <- struct{}{} // the first call ends; head sends itself and member, and is held
		synctest.Wait()
		if err, _ := returned("first"); err != nil {
			t.Errorf("first: %v", err)
		}
		waiting("head", "member")
		time.Sleep(5 * time.Second) // member's deadline passes during the call
		synctest.Wait()
		err, ok := returned("member")
		if ie, ind := errors.AsType[*dispatch.IndeterminateError](err); !ok || !ind || ie.BatchID == "" || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("member, sent, past its deadline: got %v (returned %v), want an IndeterminateError naming its batch, at once", err, ok)
		}
		waiting("head")
		close(g.gate)
		wg.Wait()
		if err, _ := returned("head"); err != nil {
			t.Errorf("head: %v", err)
		}
		if n := dones.Load(); n != 0 {
			t.Errorf("Done called %d times, want none", n)
		}
	})
}
