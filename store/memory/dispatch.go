package memory

import (
	"context"
	"slices"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// Dispatch assigns a batch with the pool's strategy and records it. In this
// order: a recorded req.BatchID returns that batch (a retried call counts
// once); a recorded, unexpired req.IdempotencyKey returns its batch as a
// replay if req.Fingerprint matches and fails with ErrIdempotencyMismatch if
// not; an order id the pool holds fails with ErrOrderExists; a batch the
// eligible Scales have no room for fails with ErrNoEligibleScale. A dry run
// skips the two lookups, changes nothing and returns the batch without an
// ID. Then the strategies that read every eligible Scale for every order
// refuse a batch of more than req.MaxCost eligible Scales × orders with
// ErrTooExpensive. ErrPoolNotFound, ErrEmptyBatch, ErrDuplicateOrder,
// ErrInvalidRequest (no BatchID), ErrUnknownStrategy.
func (s *Store) Dispatch(_ context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	var out dispatch.Batch
	var replayed bool
	err := s.write(req.Pool, func(p *pool) error {
		var err error
		out, replayed, err = p.dispatch(req)
		return err
	})
	return out, replayed, err
}

func (p *pool) dispatch(req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	now := req.Now
	p.settleDue(now, 0)
	if !req.DryRun {
		if req.BatchID == "" {
			return dispatch.Batch{}, false, errorf(dispatch.ErrInvalidRequest, "a batch needs an id")
		}
		if rec, ok := p.batches[req.BatchID]; ok && rec.live(now) {
			return cloneBatch(rec.batch), false, nil
		}
		if rec, ok := p.idem[req.IdempotencyKey]; ok && req.IdempotencyKey != "" && rec.live(now) {
			if rec.fingerprint != req.Fingerprint {
				return dispatch.Batch{}, false, errorf(dispatch.ErrIdempotencyMismatch, "Idempotency-Key %q was used with another request", req.IdempotencyKey)
			}
			return cloneBatch(rec.batch), true, nil
		}
	}
	if err := p.checkOrders(req); err != nil {
		return dispatch.Batch{}, false, err
	}
	pl, picker, err := p.planBatch(req)
	if err != nil {
		return dispatch.Batch{}, false, err
	}
	b := dispatch.Batch{
		Pool:        p.name,
		Strategy:    p.strategy,
		CreatedAt:   now,
		Assignments: make([]dispatch.Assignment, len(req.Orders)),
	}
	for i, o := range req.Orders {
		b.Assignments[i] = dispatch.Assignment{OrderID: o.ID, CompID: pl.compIDs[i]}
	}
	if req.DryRun {
		p.undo(pl)
		return b, false, nil
	}
	b.ID = req.BatchID
	p.commit(pl, req)
	p.picker = picker
	// A batch without a key is kept for the retention, one with a key, and
	// the key, for the key's window.
	rec := &batchRecord{batch: b, expires: now.Add(p.retention)}
	if req.IdempotencyKey != "" {
		rec.key, rec.fingerprint, rec.expires = req.IdempotencyKey, req.Fingerprint, now.Add(req.IdempotencyTTL)
		p.idem[rec.key] = rec
	}
	p.batches[b.ID] = rec
	p.expireAt(rec.expires, rec)
	p.sweep(now)
	return cloneBatch(b), false, nil
}

// checkOrders validates the orders of a batch against the pool: ids unique
// (a repeat fails before an order held, as the Service and the Redis store
// find it), not held, and room for all of them.
func (p *pool) checkOrders(req dispatch.DispatchRequest) error {
	if len(req.Orders) == 0 {
		return errorf(dispatch.ErrEmptyBatch, "a batch needs at least one order")
	}
	if id, ok := dispatch.RepeatedOrder(req.Orders); ok {
		return errorf(dispatch.ErrDuplicateOrder, "order %q appears more than once", id)
	}
	for _, o := range req.Orders {
		if held, ok := p.orders[o.ID]; ok && held.live(req.Now) {
			return errorf(dispatch.ErrOrderExists, "order %q is already in pool %q", o.ID, p.name)
		}
	}
	if p.eligible.Len() == 0 {
		return errorf(dispatch.ErrNoEligibleScale, "pool %q has no active Scale below its maxOrders", p.name)
	}
	if n := int64(len(req.Orders)); p.unlimited == 0 && p.room < n {
		return errorf(dispatch.ErrNoEligibleScale, "the eligible Scales of pool %q have room for %d orders, the batch has %d", p.name, p.room, n)
	}
	return p.checkCap(int64(len(req.Orders)))
}

// checkCap refuses n orders that could take an eligible Scale's orderCount
// past dispatch.MaxOrderCount (DESIGN §1). Only a Scale without maxOrders
// can pass it (maxOrders is at most the bound). Waterfill (balancing.Levels)
// raises no Scale more than n above the lowest eligible Scale without
// maxOrders, which stays in the table to the end; any other strategy may
// give all n to the highest. The Redis store makes the same check (lib.lua's capCheck).
func (p *pool) checkCap(n int64) error {
	last := p.eligible.Len() - 1
	if p.eligible.At(last).Count+n <= dispatch.MaxOrderCount {
		return nil // no Scale is within reach of the bound
	}
	refuse := func(l balancing.Load) error {
		return errorf(dispatch.ErrNoEligibleScale, capDetail, l.ID, l.Count, n, dispatch.MaxOrderCount)
	}
	if sp, _ := p.strategy.Spec(); sp.Kind == balancing.Levels {
		for r := 0; r <= last; r++ {
			if l := p.eligible.At(r); p.scales[l.ID].MaxOrders == 0 {
				if l.Count+n > dispatch.MaxOrderCount {
					return refuse(l)
				}
				return nil
			}
		}
		return nil
	}
	for r := last; r >= 0; r-- {
		l := p.eligible.At(r)
		if l.Count+n <= dispatch.MaxOrderCount {
			return nil
		}
		if p.scales[l.ID].MaxOrders == 0 {
			return refuse(l)
		}
	}
	return nil
}

// capDetail is checkCap's detail, the same as the Redis store's.
const capDetail = "scale %q holds %d orders: %d more could take it past %d, the most a Scale holds; give it a maxOrders or another state"

// plan is a batch's assignment before it is applied: the eligible rankings
// already show it, the Scales do not yet.
type plan struct {
	compIDs []string         // per order, in request order
	scales  []*scale         // the Scales picked, in the order first picked
	added   map[*scale]int64 // orders per Scale picked
	// synced is the part of added that the eligible rankings show, for the
	// plans of pickEach, which move a Scale only when it fills up or at the
	// end.
	synced map[*scale]int64
}

// waterfill assigns n orders with balancing.Waterfill over the eligible
// ranking. A Scale that reaches its maxOrders stops the run: the picks so far
// are applied to the ranking, which the full Scale leaves, and a new run
// takes the remaining orders. The caller has checked that there is room.
func (p *pool) waterfill(n int) plan {
	pl := plan{compIDs: make([]string, 0, n), added: make(map[*scale]int64)}
	for len(pl.compIDs) < n {
		round := make(map[*scale]int64)
		var picked []*scale
		got := balancing.Waterfill(&p.eligible, n-len(pl.compIDs), func(rank int) bool {
			sc := p.scales[p.eligible.At(rank).ID]
			if round[sc] == 0 {
				picked = append(picked, sc)
			}
			if pl.added[sc] == 0 {
				pl.scales = append(pl.scales, sc)
			}
			round[sc]++
			pl.added[sc]++
			pl.compIDs = append(pl.compIDs, sc.CompID)
			return sc.MaxOrders == 0 || sc.OrderCount()+pl.added[sc] < sc.MaxOrders
		})
		if got == 0 {
			panic("memory: waterfill found no room that the pool counted")
		}
		cs := make([]slotChange, len(picked))
		for i, sc := range picked {
			to := pl.slot(sc)
			from := to
			from.load.Count -= round[sc]
			from.in = true
			cs[i] = slotChange{from: from, to: to}
		}
		p.moveEligible(cs)
	}
	return pl
}

// slot is where sc, which the plan picked, stands among the eligible Scales
// with the plan applied.
func (pl plan) slot(sc *scale) slot { return slotAt(sc, sc.OrderCount()+pl.added[sc]) }

// slotAt is where sc, an active Scale, stands among the eligible Scales at
// orderCount c.
func slotAt(sc *scale, c int64) slot {
	return slot{
		load: balancing.Load{ID: sc.CompID, Count: c},
		in:   sc.MaxOrders == 0 || c < sc.MaxOrders,
		max:  sc.MaxOrders,
	}
}

// undo returns the eligible ranking to where it was before the plan.
func (p *pool) undo(pl plan) {
	cs := make([]slotChange, len(pl.scales))
	for i, sc := range pl.scales {
		cs[i] = slotChange{from: pl.slot(sc), to: sc.slot()}
	}
	p.moveEligible(cs)
}

// commit applies the plan to the Scales and the ranking of all Scales, and
// records the orders.
func (p *pool) commit(pl plan, req dispatch.DispatchRequest) {
	all := make([]change, len(pl.scales))
	for i, sc := range pl.scales {
		all[i] = change{from: sc.load(), to: pl.slot(sc).load, wasIn: true, isIn: true}
	}
	p.all.apply(all)
	for i, in := range req.Orders {
		sc := p.scales[pl.compIDs[i]]
		o := &order{Order: dispatch.Order{
			ID:         in.ID,
			CompID:     sc.CompID,
			BatchID:    req.BatchID,
			Key:        in.Key,
			State:      dispatch.Assigned,
			AssignedAt: req.Now,
		}}
		p.orders[o.ID] = o
		p.push(sc, o)
	}
	p.counters.Dispatched += int64(len(req.Orders))
}

// GetBatch returns a recorded batch: ErrPoolNotFound, ErrBatchNotFound
// (also for one whose time has passed at now, not yet swept).
func (s *Store) GetBatch(_ context.Context, poolName, batchID string, now time.Time) (dispatch.Batch, error) {
	var out dispatch.Batch
	err := s.read(poolName, func(p *pool) error {
		rec, ok := p.batches[batchID]
		if !ok || !rec.live(now) {
			return errorf(dispatch.ErrBatchNotFound, "batch %q in pool %q", batchID, poolName)
		}
		out = cloneBatch(rec.batch)
		return nil
	})
	return out, err
}

// Table returns the waterfill table over the pool's eligible Scales:
// ErrPoolNotFound.
func (s *Store) Table(_ context.Context, poolName string) (dispatch.Table, error) {
	var out dispatch.Table
	err := s.read(poolName, func(p *pool) error {
		out.CompIDs, out.DispatchCounts = balancing.Table(&p.eligible)
		return nil
	})
	return out, err
}

func cloneBatch(b dispatch.Batch) dispatch.Batch {
	b.Assignments = slices.Clone(b.Assignments)
	return b
}
