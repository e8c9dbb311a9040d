package api

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/go-chi/chi/v5"
)

// reqContext is a dispatch.CancelWaiter.
var _ dispatch.CancelWaiter = (*reqContext)(nil)

// reqContext is the context front gives a request: net/http's context, the
// request's reqState (the value of stateKey), and, but for a stream, a
// deadline at the request's timeout.
//
// Its timer is made only when something waits on it. Done arms it: from
// then on it answers as context.WithDeadline(parent, deadline) does, and
// so does Err once the deadline has passed. Until then Deadline
// still bounds whatever reads it (a Redis call sets its socket's deadline
// from it), and Err tells a passed deadline without a timer. On a
// single-order request nothing waits on it: the coalescer makes the call
// with a context of its own, and a request that queues for its pool's
// Redis calls waits on CancelDone. A timer per request (the timerCtx, the
// runtime's timer, a map of children in net/http's context, and the cancel
// that undoes them) cost about 5,000 instructions of a replica's ~115k per
// single-order request.
type reqContext struct {
	parent   context.Context
	st       reqState
	route    *chi.Context // chi's route context (chi.RouteCtxKey), set by front
	deadline time.Time    // zero for a stream: the parent's deadline, if any

	mu    sync.Mutex
	timed atomic.Pointer[timedContext] // set once, by arm
	ended atomic.Bool                  // end was called before arm
}

// timedContext is what arm makes of a reqContext.
type timedContext struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// newReqContext returns the context of a request whose context from
// net/http is parent; timeout 0 sets no deadline (a stream's).
func newReqContext(parent context.Context, start time.Time, timeout time.Duration) *reqContext {
	c := &reqContext{parent: parent}
	if timeout > 0 {
		c.deadline = start.Add(timeout)
	}
	return c
}

// arm returns the context that Done waits on: the parent bounded by the
// deadline, made on the first call.
func (c *reqContext) arm() context.Context {
	if t := c.timed.Load(); t != nil {
		return t.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timed.Load(); t != nil {
		return t.ctx
	}
	t := &timedContext{}
	switch {
	case c.ended.Load():
		t.ctx, t.cancel = context.WithCancel(context.WithoutCancel(c.parent))
		t.cancel()
	case c.deadline.IsZero():
		t.ctx, t.cancel = c.parent, func() {}
	default:
		t.ctx, t.cancel = context.WithDeadline(c.parent, c.deadline)
	}
	c.timed.Store(t)
	return t.ctx
}

// end cancels a context with a deadline once its request is answered, as
// the CancelFunc of context.WithDeadline does: an armed one is cancelled;
// one never armed answers Canceled from then on, and is armed already
// cancelled.
func (c *reqContext) end() {
	c.mu.Lock()
	t := c.timed.Load()
	if t == nil {
		c.ended.Store(true)
	}
	c.mu.Unlock()
	if t != nil {
		t.cancel()
	}
}

// passed reports whether the context has a deadline of its own and it has
// passed.
func (c *reqContext) passed() bool {
	return !c.deadline.IsZero() && !time.Now().Before(c.deadline)
}

// Deadline returns the earlier of the parent's deadline and the context's
// own.
func (c *reqContext) Deadline() (time.Time, bool) {
	d, ok := c.parent.Deadline()
	if c.deadline.IsZero() || ok && d.Before(c.deadline) {
		return d, ok
	}
	return c.deadline, true
}

// Done arms the context and returns its channel.
func (c *reqContext) Done() <-chan struct{} { return c.arm().Done() }

// CancelDone returns a channel closed when the parent is done: what Done
// waits for but the deadline, so it arms no timer (dispatch.CancelWaiter:
// a request queued for its pool's calls waits on it, and its pool's queue
// watches the deadlines with one timer). end, which comes only once the
// request's handler has returned, does not close it; net/http cancels the
// parent soon after. Once armed, it is the armed context's Done.
func (c *reqContext) CancelDone() <-chan struct{} {
	if t := c.timed.Load(); t != nil {
		return t.ctx.Done()
	}
	return c.parent.Done()
}

// Err returns the armed context's error, and arms it first once the parent
// is done, the request was answered (Canceled) or the deadline has passed
// (DeadlineExceeded); until then nil.
func (c *reqContext) Err() error {
	if t := c.timed.Load(); t != nil {
		return t.ctx.Err()
	}
	// A cancelled parent arms it too: answered from the parent, Err could
	// say Canceled while another goroutine arms it past its deadline, and
	// DeadlineExceeded from then on.
	if c.parent.Err() != nil || c.ended.Load() || c.passed() {
		return c.arm().Err()
	}
	return nil
}

// Value returns the request's reqState for stateKey, chi's route context
// for chi.RouteCtxKey once front has set it, and otherwise the
// armed context's value (so that the contexts derived from this one find
// its cancellation), or the parent's. It does not read the clock: chi's
// route context is looked up several times a request, and a clock read
// costs some 100 ns on this project's VMs. context.Cause asks Err first,
// which arms a context past its deadline.
func (c *reqContext) Value(key any) any {
	if _, ok := key.(stateKey); ok {
		return &c.st
	}
	if key == chi.RouteCtxKey && c.route != nil {
		return c.route
	}
	if t := c.timed.Load(); t != nil {
		return t.ctx.Value(key)
	}
	if c.ended.Load() {
		return c.arm().Value(key)
	}
	return c.parent.Value(key)
}
