package memory

import (
	"slices"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// pickFunc returns the Scale of order i, given the order's two random
// numbers and the plan so far, whose loads it must read through pl.count.
type pickFunc func(i int, r1, r2 uint64, pl *plan) *scale

// pickEach builds the plan of a batch one order at a time: each pick sees
// the loads of the earlier ones, and a Scale that reaches its maxOrders
// leaves the eligible rankings at once, so that no later pick can choose
// it. The other Scales move in the rankings once, at the end. The caller
// has checked that there is room for every order.
func (p *pool) pickEach(req dispatch.DispatchRequest, pick pickFunc) plan {
	n := len(req.Orders)
	pl := plan{compIDs: make([]string, 0, n), added: make(map[*scale]int64), synced: make(map[*scale]int64)}
	for i := range n {
		r1, r2 := randPair(req.Rand, i)
		sc := pick(i, r1, r2, &pl)
		if pl.added[sc] == 0 {
			pl.scales = append(pl.scales, sc)
		}
		pl.added[sc]++
		pl.compIDs = append(pl.compIDs, sc.CompID)
		if !pl.slot(sc).in {
			p.sync(&pl, []*scale{sc})
		}
	}
	p.sync(&pl, pl.scales)
	return pl
}

// randPair returns the two random numbers of order i; numbers the request
// lacks count as 0.
func randPair(rnd []uint64, i int) (r1, r2 uint64) {
	if 2*i < len(rnd) {
		r1 = rnd[2*i]
	}
	if 2*i+1 < len(rnd) {
		r2 = rnd[2*i+1]
	}
	return r1, r2
}

// count is sc's orderCount with the plan applied.
func (pl *plan) count(sc *scale) int64 { return sc.OrderCount() + pl.added[sc] }

// sync moves the Scales in the eligible rankings from where they stand to
// where the plan puts them.
func (p *pool) sync(pl *plan, scs []*scale) {
	var cs []slotChange
	for _, sc := range scs {
		if pl.synced[sc] == pl.added[sc] {
			continue
		}
		cs = append(cs, slotChange{from: slotAt(sc, sc.OrderCount()+pl.synced[sc]), to: pl.slot(sc)})
		pl.synced[sc] = pl.added[sc]
	}
	if len(cs) > 0 {
		p.moveEligible(cs)
	}
}

// candidates returns the eligible Scales as the Pickers see them, in compId
// order: orderCount, effective weight at nowMs and response-time average.
func (p *pool) candidates(nowMs int64) []balancing.Candidate {
	out := make([]balancing.Candidate, 0, p.byID.Len())
	p.byID.scan(0, func(l balancing.Load) bool {
		sc := p.scales[l.ID]
		out = append(out, balancing.Candidate{
			ID:     sc.CompID,
			Count:  sc.OrderCount(),
			Weight: p.weight(sc, nowMs),
			AvgMs:  sc.avgMs,
			HasAvg: sc.hasAvg,
		})
		return true
	})
	return out
}

// pickCandidates runs picker, a strategy that reads every Scale for every
// order, over the candidates: each pick raises its Scale's count, and a
// Scale that reaches its maxOrders leaves the candidates.
func (p *pool) pickCandidates(req dispatch.DispatchRequest, picker balancing.Picker) plan {
	cands := p.candidates(req.Now.UnixMilli())
	return p.pickEach(req, func(_ int, r1, r2 uint64, _ *plan) *scale {
		k := picker.Pick(cands, r1, r2)
		sc := p.scales[cands[k].ID]
		cands[k].Count++
		if sc.MaxOrders > 0 && cands[k].Count >= sc.MaxOrders {
			cands = slices.Delete(cands, k, k+1)
		}
		return sc
	})
}

// ranks is the eligible Scales of a batch in compId order as
// balancing.Ranks: byID, with the counts of the plan so far and the
// effective weights at nowMs. A cheap Picker reads O(log N) of them per
// order.
type ranks struct {
	p     *pool
	pl    *plan
	nowMs int64
}

var _ balancing.Ranks = (*ranks)(nil)

// Len returns the number of eligible Scales.
func (r *ranks) Len() int { return r.p.byID.Len() }

// At returns the eligible Scale at rank k as a candidate.
func (r *ranks) At(k int) balancing.Candidate {
	sc := r.p.rank(k)
	return balancing.Candidate{
		ID:     sc.CompID,
		Count:  r.pl.count(sc),
		Weight: r.p.weight(sc, r.nowMs),
		AvgMs:  sc.avgMs,
		HasAvg: sc.hasAvg,
	}
}

// After returns the rank of the first eligible compId after id.
func (r *ranks) After(id string) int { return r.p.byID.after(balancing.Load{ID: id}) }

// rank returns the eligible Scale at rank k in compId order.
func (p *pool) rank(k int) *scale { return p.scales[p.byID.At(k).ID] }

// pickRanks runs picker, a strategy that reads O(log N) of the pool per
// order, over the eligible Scales by rank, without building the
// candidates: a Scale that fills up leaves byID at once (pickEach).
func (p *pool) pickRanks(req dispatch.DispatchRequest, picker balancing.RankPicker) plan {
	r := &ranks{p: p, nowMs: req.Now.UnixMilli()} // one per batch: no allocation per order
	return p.pickEach(req, func(_ int, r1, r2 uint64, pl *plan) *scale {
		r.pl = pl
		return p.rank(picker.PickRank(r, r1, r2))
	})
}

// pickConsistentHash looks the order's key (its id without one) up on the
// ring, walking past the points of Scales that are not eligible with the
// plan applied.
func (p *pool) pickConsistentHash(o dispatch.OrderInput, pl *plan) *scale {
	key := o.Key
	if key == "" {
		key = o.ID
	}
	id, ok := p.ring.Lookup(key, func(id string) bool {
		if _, _, in := p.byID.locate(balancing.Load{ID: id}); !in {
			return false // not eligible: down, draining, not up, full, or excluded
		}
		sc := p.scales[id]
		return sc.MaxOrders == 0 || pl.count(sc) < sc.MaxOrders
	})
	if !ok {
		panic("memory: the ring has no eligible Scale that the pool counted")
	}
	return p.scales[id]
}
