package memory

import (
	"context"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// Fail handles a failure report (see dispatch.FailRequest): an order still
// assigned to req.CompID moves, by the pool's strategy, to an eligible
// Scale other than req.CompID, and the report counts against req.CompID
// unless it is ejected. ErrPoolNotFound, ErrOrderNotFound,
// ErrNoEligibleScale, ErrTooExpensive.
func (s *Store) Fail(_ context.Context, req dispatch.FailRequest) (dispatch.FailResult, error) {
	var out dispatch.FailResult
	err := s.write(req.Pool, func(p *pool) error {
		o, err := p.liveOrder(req.OrderID, req.Now)
		if err != nil {
			return err
		}
		if o.State != dispatch.Assigned || o.CompID != req.CompID {
			out.Order = o.Order
			return nil
		}
		p.settleDue(req.Now, 0)
		sc := p.scales[req.CompID]
		// Out of the eligible Scales while the order is placed, so that the
		// strategy cannot pick it.
		out1 := sc.slot()
		out1.in = false
		p.moveEligible([]slotChange{{from: sc.slot(), to: out1}})
		pl, picker, err := p.planMove(req, []*order{o})
		if err != nil {
			p.moveEligible([]slotChange{{from: out1, to: sc.slot()}})
			return err
		}
		moves := p.move(sc, out1, []*order{o}, pl, func() {
			if p.health.FailureCounts(sc.Scale, req.Now) {
				out.Counted = true
				p.counters.Failed++
				p.track(sc, func() { out.Ejected = p.health.CountFailure(&sc.Scale, req.Now) })
				p.record(sc, req.Now)
			}
		})
		p.picker = picker
		out.Moved = len(moves) == 1
		out.Order = o.Order
		p.sweep(req.Now)
		return nil
	})
	return out, err
}

// planMove plans the batch that moves os, one failure report's order, over
// the eligible Scales: ErrNoEligibleScale when they have no room,
// ErrTooExpensive.
func (p *pool) planMove(req dispatch.FailRequest, os []*order) (plan, balancing.Picker, error) {
	n := int64(len(os))
	if p.eligible.Len() == 0 {
		return plan{}, nil, errorf(dispatch.ErrNoEligibleScale, "pool %q has no eligible Scale other than %q to take order %q", p.name, req.CompID, req.OrderID)
	}
	if p.unlimited == 0 && p.room < n {
		return plan{}, nil, errorf(dispatch.ErrNoEligibleScale, "the eligible Scales of pool %q other than %q have no room for order %q", p.name, req.CompID, req.OrderID)
	}
	if err := p.checkCap(n); err != nil {
		return plan{}, nil, err
	}
	return p.planBatch(moveRequest(p.name, os, req.Now, req.Rand, req.MaxCost))
}
