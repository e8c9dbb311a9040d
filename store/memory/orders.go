package memory

import (
	"context"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// GetOrder returns an order: ErrPoolNotFound, ErrOrderNotFound (also for
// one whose retention has passed at now, not yet swept).
func (s *Store) GetOrder(_ context.Context, poolName, orderID string, now time.Time) (dispatch.Order, error) {
	var out dispatch.Order
	err := s.read(poolName, func(p *pool) error {
		o, ok := p.orders[orderID]
		if !ok || !o.live(now) {
			return orderNotFound(poolName, orderID)
		}
		out = o.Order
		return nil
	})
	return out, err
}

// Complete completes the orders at now, all or none, and returns them in
// request order with the number that were assigned before. A completed order
// stays as it was. Each newly completed order's DurationMs (0: not reported)
// feeds its Scale's response-time average. ErrPoolNotFound, ErrOrderNotFound,
// ErrOrderState (a cancelled order).
func (s *Store) Complete(_ context.Context, poolName string, cs []dispatch.Completion, now time.Time) ([]dispatch.Order, int, error) {
	var out []dispatch.Order
	var n int
	err := s.write(poolName, func(p *pool) error {
		os := make([]*order, len(cs))
		for i, c := range cs {
			o, err := p.liveOrder(c.OrderID, now)
			if err != nil {
				return err
			}
			if o.State == dispatch.Cancelled {
				return errorf(dispatch.ErrOrderState, "order %q is cancelled", o.ID)
			}
			os[i] = o
		}
		var ps []prior
		seen := make(map[*scale]bool)
		for i, o := range os {
			if o.State != dispatch.Assigned {
				continue
			}
			sc := p.scales[o.CompID]
			if !seen[sc] {
				seen[sc] = true
				ps = append(ps, prior{sc: sc, was: sc.slot()})
			}
			p.release(sc, o, dispatch.Completed, now)
			sc.observe(cs[i].DurationMs)
			n++
		}
		p.settle(ps)
		p.sweepFor(now, n)
		out = make([]dispatch.Order, len(os))
		for i, o := range os {
			out[i] = o.Order
		}
		return nil
	})
	return out, n, err
}

// Cancel cancels an order at now; a cancelled order stays as it was.
// ErrPoolNotFound, ErrOrderNotFound, ErrOrderState (a completed order).
func (s *Store) Cancel(_ context.Context, poolName, orderID string, now time.Time) (dispatch.Order, error) {
	var out dispatch.Order
	err := s.write(poolName, func(p *pool) error {
		o, err := p.liveOrder(orderID, now)
		if err != nil {
			return err
		}
		switch o.State {
		case dispatch.Completed:
			return errorf(dispatch.ErrOrderState, "order %q is completed", o.ID)
		case dispatch.Assigned:
			sc := p.scales[o.CompID]
			was := prior{sc: sc, was: sc.slot()}
			p.release(sc, o, dispatch.Cancelled, now)
			p.settle([]prior{was})
		}
		p.sweep(now)
		out = o.Order
		return nil
	})
	return out, err
}

// liveOrder returns the order the pool holds at now: ErrOrderNotFound.
func (p *pool) liveOrder(orderID string, now time.Time) (*order, error) {
	o, ok := p.orders[orderID]
	if !ok || !o.live(now) {
		return nil, orderNotFound(p.name, orderID)
	}
	return o, nil
}

// release takes an assigned order off its Scale and ends it in state at
// now. The caller settles the Scale in the rankings.
func (p *pool) release(sc *scale, o *order, state dispatch.OrderState, now time.Time) {
	sc.unlink(o)
	p.finish(o, state, now)
	if state == dispatch.Completed {
		p.counters.Completed++
	} else {
		p.counters.Cancelled++
	}
}

// finish ends an order in state at now and schedules its removal.
func (p *pool) finish(o *order, state dispatch.OrderState, now time.Time) {
	o.State = state
	o.CompletedAt = now
	o.expires = now.Add(p.retention)
	p.expireAt(o.expires, o)
}

func orderNotFound(poolName, orderID string) error {
	return errorf(dispatch.ErrOrderNotFound, "order %q in pool %q", orderID, poolName)
}
