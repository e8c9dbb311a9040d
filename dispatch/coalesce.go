package dispatch

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
}

// pending is one request and, once done is closed, its result or the group
// it is to send (group, whose first request it is).
type pending struct {
	ctx   context.Context
	req   DispatchRequest
	sent  bool        // guarded by coalescer.mu
	group []*pending  // guarded by coalescer.mu
	alone [1]*pending // the group of a request that goes alone
	done  chan struct{}
	res   DispatchResult
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
	c.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	c.mu.Lock()
	group, sent := p.group, p.sent
	if !sent {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *pending) bool { return x == p })
	}
	c.mu.Unlock()
	switch {
	case group != nil:
		return c.lead(q, p, group)
	case !sent:
		return notSent(ctx), false
	}
	select {
	case <-p.done:
		return p.res, true
	default:
		return DispatchResult{Err: &IndeterminateError{BatchID: req.BatchID, Err: ctx.Err()}}, true
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
	close(head.done)
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
			close(p.done)
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
			close(group[i].done)
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
