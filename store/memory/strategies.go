package memory

import (
	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// spec returns the pool's strategy as balancing's registry describes it:
// ErrUnknownStrategy if it is not there.
func (p *pool) spec() (balancing.Strategy, error) {
	sp, ok := p.strategy.Spec()
	if !ok {
		return sp, errorf(dispatch.ErrUnknownStrategy, "pool %q has strategy %q", p.name, p.strategy)
	}
	return sp, nil
}

// costly reports whether the pool's strategy reads every eligible Scale
// for every order, and so has a cost cap.
func (p *pool) costly() bool {
	sp, err := p.spec()
	return err == nil && sp.Cost == balancing.Costly
}

// resetStrategy clears the strategy's state after the pool changed its
// strategy: a fresh Picker for the strategies that are Pickers, and the
// ring of every registered Scale (in any state) for consistent hashing.
// Response-time averages are kept.
func (p *pool) resetStrategy() {
	p.picker, p.ring = nil, nil
	sp, err := p.spec()
	if err != nil {
		return
	}
	if sp.New != nil {
		p.picker = sp.New()
	}
	if sp.Kind == balancing.Hashed {
		// NewRing sorts the points, so the map's order does not show.
		ids := make([]string, 0, len(p.scales))
		for id := range p.scales {
			ids = append(ids, id)
		}
		p.ring = balancing.NewRing(balancing.DefaultVNodes, ids...)
	}
}

// planBatch assigns the orders of req with the pool's strategy. It works on
// a copy of the strategy's Picker and returns it for a real dispatch to
// keep. The caller has checked that the eligible Scales have room for the
// batch. ErrTooExpensive, ErrUnknownStrategy.
func (p *pool) planBatch(req dispatch.DispatchRequest) (plan, balancing.Picker, error) {
	sp, err := p.spec()
	if err != nil {
		return plan{}, p.picker, err
	}
	picker := balancing.Clone(p.picker)
	switch {
	case sp.Kind == balancing.Levels:
		return p.waterfill(len(req.Orders)), picker, nil
	case sp.Kind == balancing.Hashed:
		return p.pickEach(req, func(i int, _, _ uint64, pl *plan) *scale {
			return p.pickConsistentHash(req.Orders[i], pl)
		}), picker, nil
	case picker == nil:
		return plan{}, picker, errorf(dispatch.ErrUnknownStrategy, "pool %q has strategy %q, which has no picker", p.name, p.strategy)
	}
	if sp.Random {
		req.Rand = req.Randoms() // (drawn for the strategies that draw only)
	}
	if rp, ok := picker.(balancing.RankPicker); ok && sp.Cost == balancing.Cheap {
		return p.pickRanks(req, rp), picker, nil
	}
	if err := p.checkCost(req); err != nil {
		return plan{}, picker, err
	}
	return p.pickCandidates(req, picker), picker, nil
}

// checkCost refuses a batch whose strategy would read more than req.MaxCost
// (dispatch.DefaultMaxCost if not positive) eligible Scales × orders:
// ErrTooExpensive.
func (p *pool) checkCost(req dispatch.DispatchRequest) error {
	maxCost := req.MaxCost
	if maxCost <= 0 {
		maxCost = dispatch.DefaultMaxCost
	}
	scales, orders := int64(p.eligible.Len()), int64(len(req.Orders))
	if scales*orders > maxCost {
		return errorf(dispatch.ErrTooExpensive, "strategy %s reads every eligible Scale for every order: %d Scales × %d orders is over the cap of %d; send smaller batches",
			p.strategy, scales, orders, maxCost)
	}
	return nil
}

// weight is the effective weight of sc at now: its weight, ramped up by
// slow start since it became active.
func (p *pool) weight(sc *scale, nowMs int64) int64 {
	return balancing.SlowStartWeight(sc.Weight, nowMs-sc.ActiveSince.UnixMilli(), p.slowStart.Milliseconds())
}
