package memory

import (
	"context"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// healthState is what a pool keeps to judge its Scales' health without
// reading them all: the three indexes of dispatch's Settling rules, the
// lapsed Scales that may still hold orders, and the change journal.
type healthState struct {
	// leases holds the Scales not recorded lapsed, live the recorded
	// lapsed ones, both by (LastHeartbeatAt ms, compId); ejected the
	// recorded ejected ones by (EjectedUntil ms, compId).
	leases, lapsed, ejected ranking
	// holding holds, by compId, Scales that lapsed holding orders; an
	// entry that no longer is (revived, emptied, removed) leaves when Tick
	// meets it.
	holding ranking
	journal []dispatch.HealthChange
	dropped int
}

// healthKey is what places a Scale in the indexes.
type healthKey struct {
	health    dispatch.Health
	heartbeat int64
	until     int64
}

func keyOf(sc *scale) healthKey {
	return healthKey{health: sc.Health, heartbeat: sc.LastHeartbeatAt.UnixMilli(), until: sc.EjectedUntil.UnixMilli()}
}

// reindex moves the Scale id in the indexes from where k placed it (if
// wasIn) to where to places it (if isIn).
func (h *healthState) reindex(id string, k healthKey, wasIn bool, to healthKey, isIn bool) {
	type index struct {
		r   *ranking
		has func(healthKey) (bool, int64)
	}
	for _, ix := range []index{
		{&h.leases, func(k healthKey) (bool, int64) { return k.health != dispatch.Lapsed, k.heartbeat }},
		{&h.lapsed, func(k healthKey) (bool, int64) { return k.health == dispatch.Lapsed, k.heartbeat }},
		{&h.ejected, func(k healthKey) (bool, int64) { return k.health == dispatch.Ejected, k.until }},
	} {
		fromIn, fromAt := ix.has(k)
		toIn, toAt := ix.has(to)
		fromIn, toIn = fromIn && wasIn, toIn && isIn
		if fromIn == toIn && fromAt == toAt {
			continue
		}
		ix.r.apply([]change{{
			from: balancing.Load{ID: id, Count: fromAt}, wasIn: fromIn,
			to: balancing.Load{ID: id, Count: toAt}, isIn: toIn,
		}})
	}
}

// track runs f, which may change sc's health fields, and keeps the
// indexes in step.
func (p *pool) track(sc *scale, f func()) {
	k := keyOf(sc)
	f()
	p.hs.reindex(sc.CompID, k, true, keyOf(sc), true)
}

// record settles sc's health at now (dispatch.HealthOptions.Settle) and
// journals the change. The caller moves sc in the eligible rankings.
func (p *pool) record(sc *scale, now time.Time) bool {
	var c dispatch.HealthChange
	var changed bool
	p.track(sc, func() { c, changed = p.health.Settle(&sc.Scale, now) })
	if !changed {
		return false
	}
	c.Pool = p.name
	if c.To == dispatch.Lapsed && sc.Outstanding > 0 {
		id := balancing.Load{ID: sc.CompID}
		if _, _, found := p.hs.holding.locate(id); !found {
			p.hs.holding.apply([]change{{to: id, isIn: true}})
		}
	}
	p.hs.journal = append(p.hs.journal, c)
	if len(p.hs.journal) > dispatch.MaxJournal {
		p.hs.journal = p.hs.journal[1:]
		p.hs.dropped++
	}
	return true
}

// settleOne records sc's health at now and moves it in the rankings.
func (p *pool) settleOne(sc *scale, now time.Time) {
	was := prior{sc: sc, was: sc.slot()}
	if p.record(sc, now) {
		p.settle([]prior{was})
	}
}

// nextDue returns the first due Scale in dispatch's Settling order, or nil.
func (p *pool) nextDue(now time.Time) *scale {
	h, nowMs := p.health, now.UnixMilli()
	if t := h.HeartbeatTimeout.Milliseconds(); t > 0 && p.hs.leases.Len() > 0 {
		if l := p.hs.leases.At(0); h.Lapsed(p.scales[l.ID].Scale, now) {
			return p.scales[l.ID]
		}
	}
	if p.hs.ejected.Len() > 0 {
		if l := p.hs.ejected.At(0); l.Count <= nowMs {
			return p.scales[l.ID]
		}
	}
	if n := p.hs.lapsed.Len(); n > 0 {
		// Leases that have not run out are the latest heartbeats.
		first := 0
		if t := h.HeartbeatTimeout.Milliseconds(); t > 0 && h.LeasesSince.UnixMilli()+t <= nowMs {
			first = p.hs.lapsed.CountAtMost(nowMs - t)
		}
		if first < n {
			return p.scales[p.hs.lapsed.At(first).ID]
		}
	}
	return nil
}

// settleDue settles the pool's due Scales at now, at most limit of them
// (all if limit is 0), and reports whether a due Scale is left.
func (p *pool) settleDue(now time.Time, limit int) bool {
	for n := 0; ; n++ {
		sc := p.nextDue(now)
		if sc == nil {
			return false
		}
		if limit > 0 && n == limit {
			return true
		}
		if !p.health.SettleDue(sc.Scale, now) {
			panic("memory: the health indexes name a Scale that is not due: " + sc.CompID)
		}
		p.settleOne(sc, now)
	}
}

// Heartbeat renews the Scale's lease at now (see dispatch.Store): it
// records a lapse the old lease had reached, renews, applies orderCount
// and records the health the new lease gives. ErrPoolNotFound,
// ErrScaleNotFound.
func (s *Store) Heartbeat(_ context.Context, poolName, compID string, orderCount *int64, now time.Time) (dispatch.Scale, error) {
	var out dispatch.Scale
	err := s.write(poolName, func(p *pool) error {
		sc, ok := p.scales[compID]
		if !ok {
			return scaleNotFound(poolName, compID)
		}
		was := prior{sc: sc, was: sc.slot()}
		p.record(sc, now)
		p.track(sc, func() { sc.LastHeartbeatAt = now })
		if orderCount != nil {
			sc.BaseLoad = max(0, *orderCount-sc.Outstanding)
		}
		p.record(sc, now)
		p.settle([]prior{was})
		p.sweep(now)
		out = p.health.View(sc.Scale, now)
		return nil
	})
	return out, err
}

// Tick does one bounded share of the pool's health work (see
// dispatch.TickRequest). ErrPoolNotFound.
func (s *Store) Tick(_ context.Context, req dispatch.TickRequest) (dispatch.TickResult, error) {
	var out dispatch.TickResult
	err := s.write(req.Pool, func(p *pool) error {
		limit := req.Limit
		if limit <= 0 {
			limit = dispatch.DefaultTickLimit
		}
		out.More = p.settleDue(req.Now, limit)
		if p.health.OnLapse == dispatch.ReassignLapsed {
			var more bool
			out.Moves, more = p.moveLapsed(req, limit)
			out.More = out.More || more
		}
		n := min(limit, len(p.hs.journal))
		out.Changes = append([]dispatch.HealthChange(nil), p.hs.journal[:n]...)
		p.hs.journal = p.hs.journal[n:]
		if len(p.hs.journal) == 0 {
			p.hs.journal = nil
		}
		out.Dropped, p.hs.dropped = p.hs.dropped, 0
		out.More = out.More || len(p.hs.journal) > 0
		out.Unsettled = p.hs.lapsed.Len() + p.hs.ejected.Len()
		p.sweep(req.Now)
		return nil
	})
	return out, err
}

// holder returns the lapsed Scale with orders whose compId is lowest, or
// nil, dropping the entries of holding that no longer qualify.
func (p *pool) holder() *scale {
	for p.hs.holding.Len() > 0 {
		id := p.hs.holding.At(0)
		if sc, ok := p.scales[id.ID]; ok && sc.Health == dispatch.Lapsed && sc.Outstanding > 0 {
			return sc
		}
		p.hs.holding.apply([]change{{from: id, wasIn: true}})
	}
	return nil
}

// moveLapsed moves one chunk of a lapsed Scale's orders (step 2 of
// dispatch.TickRequest) and reports whether another chunk could move now.
func (p *pool) moveLapsed(req dispatch.TickRequest, limit int) ([]dispatch.Move, bool) {
	sc := p.holder()
	if sc == nil || p.eligible.Len() == 0 {
		return nil, false
	}
	n := min(int64(limit), sc.Outstanding)
	if p.unlimited == 0 {
		n = min(n, p.room)
	}
	if p.costly() {
		maxCost := req.MaxCost
		if maxCost <= 0 {
			maxCost = dispatch.DefaultMaxCost
		}
		n = min(n, maxCost/int64(p.eligible.Len()))
	}
	if n <= 0 || p.checkCap(n) != nil {
		return nil, false
	}
	os := sc.oldest(int(n))
	dr := moveRequest(p.name, os, req.Now, req.Rand, req.MaxCost)
	dr.RandSource = req.RandSource
	pl, picker, err := p.planBatch(dr)
	if err != nil {
		return nil, false
	}
	moves := p.move(sc, sc.slot(), os, pl, nil)
	p.picker = picker
	return moves, p.holder() != nil
}
