package memory

import (
	"maps"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// strategyState is what the strategies keep between batches, held as the
// balancing Pickers hold it. Only the field of the pool's strategy is used;
// a change of strategy zeroes them all. A batch works on a copy, which only
// a real dispatch keeps, so a dry run changes nothing.
type strategyState struct {
	rr   balancing.RoundRobin               // round-robin: the last compId picked
	wrr  balancing.WeightedRoundRobin       // weighted-round-robin: the counter
	swrr balancing.SmoothWeightedRoundRobin // smooth-weighted-round-robin: current weights
	wrt  balancing.WeightedResponseTime     // weighted-response-time: its fallback round robin
	lc   balancing.LeastConnections         // least-connections: current weights of its ties
}

// clone returns a copy that shares no map with s.
func (s strategyState) clone() strategyState {
	s.swrr.Current = maps.Clone(s.swrr.Current)
	s.lc.Current = maps.Clone(s.lc.Current)
	return s
}

// perOrderPicker returns the Picker, holding its state in s, of a strategy
// that reads every eligible Scale for every order, or nil for the others.
func (s *strategyState) perOrderPicker(st dispatch.Strategy) balancing.Picker {
	switch st {
	case dispatch.WeightedWaterfill:
		return balancing.WeightedWaterfill{}
	case dispatch.WeightedRandom:
		return balancing.WeightedRandom{}
	case dispatch.WeightedRoundRobin:
		return &s.wrr
	case dispatch.SmoothWeightedRoundRobin:
		return &s.swrr
	case dispatch.WeightedResponseTime:
		return &s.wrt
	case dispatch.LeastConnections:
		return &s.lc
	}
	return nil
}

// resetStrategy clears the strategy's state after the pool changed its
// strategy, and builds the ring of every registered Scale (in any state) if
// the strategy is now consistent-hash. Response-time averages are kept.
func (p *pool) resetStrategy() {
	p.state = strategyState{}
	p.ring = nil
	if p.strategy == dispatch.ConsistentHash {
		// NewRing sorts the points, so the map's order does not show.
		ids := make([]string, 0, len(p.scales))
		for id := range p.scales {
			ids = append(ids, id)
		}
		p.ring = balancing.NewRing(balancing.DefaultVNodes, ids...)
	}
}

// planBatch assigns the orders of req with the pool's strategy. It works on
// a copy of the strategy's state and returns it for a real dispatch to
// keep. The caller has checked that the eligible Scales have room for the
// batch. ErrTooExpensive, ErrUnknownStrategy.
func (p *pool) planBatch(req dispatch.DispatchRequest) (plan, strategyState, error) {
	st := p.state.clone()
	if picker := st.perOrderPicker(p.strategy); picker != nil {
		if err := p.checkCost(req); err != nil {
			return plan{}, st, err
		}
		return p.pickCandidates(req, picker), st, nil
	}
	switch p.strategy {
	case dispatch.Waterfill:
		return p.waterfill(len(req.Orders)), st, nil
	case dispatch.Random:
		return p.pickEach(req, p.pickRandom), st, nil
	case dispatch.RoundRobin:
		return p.pickEach(req, func(int, uint64, uint64, *plan) *scale {
			return p.pickRoundRobin(&st.rr)
		}), st, nil
	case dispatch.PowerOfTwo:
		return p.pickEach(req, func(_ int, r1, r2 uint64, pl *plan) *scale {
			return p.pickPowerOfTwo(r1, r2, pl, req.Now.UnixMilli())
		}), st, nil
	case dispatch.ConsistentHash:
		return p.pickEach(req, func(i int, _, _ uint64, pl *plan) *scale {
			return p.pickConsistentHash(req.Orders[i], pl)
		}), st, nil
	}
	return plan{}, st, errorf(dispatch.ErrUnknownStrategy, "pool %q has strategy %q", p.name, p.strategy)
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
