package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Coalescing bounds: one store call takes at most this many batches, and
// no more orders than one batch may hold (Config.MaxBatch), so that no call
// holds the store much longer than the largest single batch would.
const maxCoalesced = 256

// DefaultCoalesceCalls is how many store calls of one pool a Service keeps
// in flight at most when it coalesces (Config.CoalesceCalls).
const DefaultCoalesceCalls = 2

// coalescer merges the concurrent dispatches of one pool into calls of a
// MultiDispatcher. A request that finds fewer than maxCalls calls of its
// pool in flight makes its call at once, alone, on its own goroutine; the
// others queue. Whoever finishes a call while requests queue takes the
// next group from the queue and hands it to the group's first request,
// which makes that call on its own goroutine and hands on in turn: under
// light load each request goes alone at once, under heavy load the calls
// grow and their number stays at maxCalls per pool, and no goroutine is
// started for a call. The batches of a call are applied in the order they
// queued, as separate calls would be.
type coalescer struct {
	store     MultiDispatcher
	single    func(context.Context, DispatchRequest) (Batch, bool, error)
	maxOrders int
	maxCalls  int
	observe   func(batches int)

	mu    sync.Mutex
	pools map[string]*queue // a pool is present while one of its calls is in flight
}

// queue holds a pool's requests not yet sent, and counts its calls in
// flight (and groups handed on, not yet sent). Requests queue only while
// calls is maxCalls.
type queue struct {
	waiting []*pending
	calls   int

	// sleepers are the requests that wait with a CancelWaiter's deadline
	// (watch), sent or not; timer wakes those whose deadline has passed
	// (expire), and is armed for timerAt, no later than the earliest of
	// theirs (zero: not armed).
	sleepers []*pending
	timer    *time.Timer
	timerAt  time.Time
}

// CancelWaiter is a context that can be waited on without a timer for its
// deadline: CancelDone returns a channel closed when the context is
// cancelled for any reason but its deadline (Deadline) passing, while
// Err reports a passed deadline whether or not that channel is closed.
// api's request context is one: it arms its timer only when something
// waits on Done, and a timer per request cost a replica about 5,000
// instructions (issue 21). A request with one that queues for its pool's
// calls waits on CancelDone, and its pool's queue watches the deadlines of
// its requests with one timer: it is woken when its deadline passes as it
// would be by Done.
type CancelWaiter interface {
	context.Context
	CancelDone() <-chan struct{}
}

// pending is one request and, once done is closed, its result, the group
// it is to send (group, whose first request it is), or its deadline
// passed: state says which closed done, which is closed once.
type pending struct {
	ctx   context.Context
	req   DispatchRequest
	sent  bool        // guarded by coalescer.mu
	group []*pending  // guarded by coalescer.mu
	alone [1]*pending // the group of a request that goes alone
	done  chan struct{}
	state atomic.Int32 // open, then handed (its result or its group) or expired
	res   DispatchResult

	// A request that waits with a CancelWaiter's deadline (watch): its
	// queue's timer expires it once the deadline has passed.
	deadline time.Time
	slot     int // its index in its queue's sleepers, guarded by coalescer.mu
}

// The states of a pending's done: open; closed for its result, or for the
// group it heads (handed); closed because its deadline passed (expired).
// One channel serves both, closed by whichever comes first (close), where
// a second channel for the deadline cost a queued request an allocation
// and a third case in its select (issue 21).
const (
	open int32 = iota
	handed
	expired
)

// close closes p's done for why (handed or expired) unless it is closed
// already.
func (p *pending) close(why int32) {
	if p.state.CompareAndSwap(open, why) {
		close(p.done)
	}
}

// dispatch sends req, alone or with others, and waits for its result, or
// for ctx, and reports whether req was sent to the store. A request whose
// ctx ends before it was sent is dropped and fails with ErrUnavailable
// (nothing was applied); one whose ctx ends after it was sent fails as
// indeterminate, since its batch may still be applied: a request that
// waits on another's call returns at once, one that makes the call
// returns when the call does.
func (c *coalescer) dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, bool) {
	p := &pending{ctx: ctx, req: req}
	c.mu.Lock()
	q := c.pools[req.Pool]
	if q == nil {
		q = &queue{}
		c.pools[req.Pool] = q
	}
	if q.calls < c.maxCalls {
		q.calls++
		p.sent = true
		c.mu.Unlock()
		p.alone[0] = p
		return c.lead(q, p, p.alone[:])
	}
	p.done = make(chan struct{})
	q.waiting = append(q.waiting, p)
	cw := c.watch(q, p)
	c.mu.Unlock()
	var ended <-chan struct{}
	if cw != nil {
		ended = cw.CancelDone()
	} else {
		ended = ctx.Done()
	}
	select {
	case <-p.done:
	case <-ended:
	}
	c.mu.Lock()
	group, sent := p.group, p.sent
	if !sent {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *pending) bool { return x == p })
	}
	if !p.deadline.IsZero() {
		q.unwatch(p)
	}
	c.mu.Unlock()
	switch {
	case group != nil:
		return c.lead(q, p, group)
	case !sent:
		return notSent(ctx), false
	}
	if p.state.Load() == handed { // sent, and its result is in
		return p.res, true
	}
	return DispatchResult{Err: &IndeterminateError{BatchID: req.BatchID, Err: ctx.Err()}}, true
}

// watch returns p's context if it is a CancelWaiter, for p to wait on
// its CancelDone; when it has a deadline, p becomes one of q's sleepers,
// and q's timer is armed for that deadline unless it is armed already for
// one no later. The caller holds c.mu.
func (c *coalescer) watch(q *queue, p *pending) CancelWaiter {
	cw, ok := p.ctx.(CancelWaiter)
	if !ok {
		return nil
	}
	d, ok := cw.Deadline()
	if !ok {
		return cw
	}
	p.deadline = d
	p.slot = len(q.sleepers)
	q.sleepers = append(q.sleepers, p)
	if q.timerAt.IsZero() || d.Before(q.timerAt) {
		c.armExpiry(q, d)
	}
	return cw
}

// unwatch takes p from q's sleepers: the last one takes its place (their
// order does not matter to expire), so that a request leaving does not
// scan the queue under c.mu. The caller holds c.mu.
func (q *queue) unwatch(p *pending) {
	last := len(q.sleepers) - 1
	moved := q.sleepers[last]
	q.sleepers[p.slot] = moved
	moved.slot = p.slot
	q.sleepers[last] = nil
	q.sleepers = q.sleepers[:last]
}

// armExpiry arms q's timer for d. The caller holds c.mu.
func (c *coalescer) armExpiry(q *queue, d time.Time) {
	q.timerAt = d
	if q.timer == nil {
		q.timer = time.AfterFunc(time.Until(d), func() { c.expire(q) })
		return
	}
	q.timer.Reset(time.Until(d))
}

// expire wakes q's sleepers whose deadline has passed, and arms q's timer
// for the earliest deadline of the others. A sleeper that left before its
// deadline leaves the timer armed for it: it then fires early and is armed
// again. It reads every sleeper of q under c.mu, and each woken one removes
// itself from q's lists: work in the length of the queue (a fire about
// once per request timeout, unless deadlines pass).
func (c *coalescer) expire(q *queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	var next time.Time
	for _, p := range q.sleepers {
		switch {
		case !p.deadline.After(now):
			p.close(expired)
		case next.IsZero() || p.deadline.Before(next):
			next = p.deadline
		}
	}
	q.timerAt = time.Time{}
	if !next.IsZero() {
		c.armExpiry(q, next)
	}
}

// notSent is the result of a request dropped because ctx ended.
func notSent(ctx context.Context) DispatchResult {
	return DispatchResult{Err: fmt.Errorf("%w: not sent: %w", ErrUnavailable, ctx.Err())}
}

// lead makes the call of group, whose first request is p, hands the next
// group on (handOn) and returns p's result. A p whose ctx has ended before
// the call is left out of it (the others' call goes on); one whose ctx
// ends during the call fails as indeterminate, as if it had left.
func (c *coalescer) lead(q *queue, p *pending, group []*pending) (DispatchResult, bool) {
	sent := p.ctx.Err() == nil
	if !sent {
		group = group[1:]
	}
	if len(group) > 0 {
		if c.observe != nil {
			c.observe(len(group))
		}
		c.send(group, p)
	}
	c.handOn(p.req.Pool, q)
	if !sent {
		return notSent(p.ctx), false
	}
	if err := p.ctx.Err(); err != nil {
		return DispatchResult{Err: &IndeterminateError{BatchID: p.req.BatchID, Err: err}}, true
	}
	return p.res, true
}

// handOn ends a call of q's pool: it takes the next group from q, as many
// as the bounds allow, and wakes its first request to send it; with none
// waiting, the call's place is free.
func (c *coalescer) handOn(pool string, q *queue) {
	c.mu.Lock()
	if len(q.waiting) == 0 {
		if q.calls--; q.calls == 0 {
			delete(c.pools, pool)
			if q.timer != nil {
				q.timer.Stop()
			}
		}
		c.mu.Unlock()
		return
	}
	k, orders := 0, 0
	for k < len(q.waiting) && k < maxCoalesced {
		n := len(q.waiting[k].req.Orders)
		if k > 0 && orders+n > c.maxOrders {
			break
		}
		orders += n
		k++
	}
	group := slices.Clone(q.waiting[:k])
	q.waiting = slices.Delete(q.waiting, 0, k)
	for _, x := range group {
		x.sent = true
	}
	head := group[0]
	head.group = group
	c.mu.Unlock()
	head.close(handed)
}

// send makes one store call for group and hands each request its result;
// it wakes each but self, which is waiting for no one.
func (c *coalescer) send(group []*pending, self *pending) {
	ctx, cancel := groupContext(group)
	defer cancel()
	if len(group) == 1 {
		p := group[0]
		p.res.Batch, p.res.Replayed, p.res.Err = c.single(ctx, p.req)
		if p != self {
			p.close(handed)
		}
		return
	}
	reqs := make([]DispatchRequest, len(group))
	for i, p := range group {
		reqs[i] = p.req
	}
	for i, r := range c.store.DispatchMany(ctx, reqs) {
		group[i].res = r
		if group[i] != self {
			group[i].close(handed)
		}
	}
}

// groupContext is the context of a call made for several requests: the
// values of the first, cancelled by none of them (a caller that leaves does
// not abort the others' call), and the latest of their deadlines, if every
// one has a deadline.
func groupContext(group []*pending) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, p := range group {
		d, ok := p.ctx.Deadline()
		if !ok {
			return context.WithoutCancel(group[0].ctx), func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(group[0].ctx), latest)
}
