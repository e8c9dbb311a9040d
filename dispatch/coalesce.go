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
// pool in flight starts a drain goroutine, which sends everything queued
// and goes on while requests queue behind its calls: under light load each
// request goes alone at once, under heavy load the calls grow and their
// number stays at maxCalls per pool. The batches of a call are applied in
// the order they queued, as separate calls would be.
type coalescer struct {
	store     MultiDispatcher
	single    func(context.Context, DispatchRequest) (Batch, bool, error)
	maxOrders int
	maxCalls  int
	observe   func(batches int)

	mu    sync.Mutex
	pools map[string]*queue // a pool is present while a drain runs
}

// queue holds a pool's requests not yet sent, and counts its drains.
type queue struct {
	waiting []*pending
	drains  int
}

// pending is one request and, once done is closed, its result.
type pending struct {
	ctx  context.Context
	req  DispatchRequest
	sent bool // guarded by coalescer.mu
	done chan struct{}
	res  DispatchResult
}

// dispatch queues req and waits for its result, or for ctx, and reports
// whether req was sent to the store. A request whose ctx ends before it was
// sent is dropped and fails with ErrUnavailable (nothing was applied); one
// already sent fails as indeterminate, since its batch may still be
// applied.
func (c *coalescer) dispatch(ctx context.Context, req DispatchRequest) (DispatchResult, bool) {
	p := &pending{ctx: ctx, req: req, done: make(chan struct{})}
	c.mu.Lock()
	q := c.pools[req.Pool]
	if q == nil {
		q = &queue{}
		c.pools[req.Pool] = q
	}
	q.waiting = append(q.waiting, p)
	start := q.drains < c.maxCalls
	if start {
		q.drains++
	}
	c.mu.Unlock()
	if start {
		go c.drain(req.Pool, q)
	}
	select {
	case <-p.done:
		return p.res, true
	case <-ctx.Done():
	}
	c.mu.Lock()
	sent := p.sent
	if !sent {
		q.waiting = slices.DeleteFunc(q.waiting, func(x *pending) bool { return x == p })
	}
	c.mu.Unlock()
	select {
	case <-p.done: // answered meanwhile
		return p.res, true
	default:
	}
	if !sent {
		return DispatchResult{Err: fmt.Errorf("%w: not sent: %w", ErrUnavailable, ctx.Err())}, false
	}
	return DispatchResult{Err: &IndeterminateError{BatchID: req.BatchID, Err: ctx.Err()}}, true
}

// drain sends pool's queued requests until none is left.
func (c *coalescer) drain(pool string, q *queue) {
	for {
		c.mu.Lock()
		if len(q.waiting) == 0 {
			if q.drains--; q.drains == 0 {
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
		for _, p := range group {
			p.sent = true
		}
		c.mu.Unlock()
		if c.observe != nil {
			c.observe(len(group))
		}
		c.send(group)
	}
}

// send makes one store call for group and hands each request its result.
func (c *coalescer) send(group []*pending) {
	ctx, cancel := groupContext(group)
	defer cancel()
	if len(group) == 1 {
		p := group[0]
		p.res.Batch, p.res.Replayed, p.res.Err = c.single(ctx, p.req)
		close(p.done)
		return
	}
	reqs := make([]DispatchRequest, len(group))
	for i, p := range group {
		reqs[i] = p.req
	}
	for i, r := range c.store.DispatchMany(ctx, reqs) {
		group[i].res = r
		close(group[i].done)
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
