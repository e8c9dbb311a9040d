package memory

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Reassign moves the outstanding orders of a down Scale to the pool's
// eligible Scales with the pool's strategy, as a batch of those orders, oldest
// first, would be assigned, all or none, after settling the pool's due
// Scales. Each moved order's Moves grows by one. ErrPoolNotFound,
// ErrScaleNotFound, ErrScaleState, ErrNoEligibleScale, ErrTooExpensive.
func (s *Store) Reassign(_ context.Context, req dispatch.ReassignRequest) ([]dispatch.Assignment, error) {
	var out []dispatch.Assignment
	err := s.write(req.Pool, func(p *pool) error {
		sc, ok := p.scales[req.CompID]
		if !ok {
			return scaleNotFound(req.Pool, req.CompID)
		}
		if sc.State != dispatch.Down {
			return errorf(dispatch.ErrScaleState, "scale %q is %s, not down", req.CompID, sc.State)
		}
		p.settleDue(req.Now, 0)
		os := sc.oldest(-1)
		out = make([]dispatch.Assignment, 0, len(os))
		if len(os) == 0 {
			p.sweep(req.Now)
			return nil
		}
		n := int64(len(os))
		if p.eligible.Len() == 0 {
			return errorf(dispatch.ErrNoEligibleScale, "pool %q has no active Scale below its maxOrders", p.name)
		}
		if p.unlimited == 0 && p.room < n {
			return errorf(dispatch.ErrNoEligibleScale, "the eligible Scales of pool %q have room for %d orders, scale %q has %d", p.name, p.room, req.CompID, n)
		}
		if err := p.checkCap(n); err != nil {
			return err
		}
		pl, picker, err := p.planBatch(moveRequest(req.Pool, os, req.Now, req.Rand, req.MaxCost))
		if err != nil {
			return err
		}
		for _, m := range p.move(sc, sc.slot(), os, pl, nil) {
			out = append(out, dispatch.Assignment{OrderID: m.OrderID, CompID: m.To})
		}
		p.picker = picker
		p.sweep(req.Now)
		return nil
	})
	return out, err
}

// moveRequest is the batch that moves os, as planBatch takes it.
func moveRequest(pool string, os []*order, now time.Time, rnd []uint64, maxCost int64) dispatch.DispatchRequest {
	dr := dispatch.DispatchRequest{Pool: pool, Orders: make([]dispatch.OrderInput, len(os)), Now: now, Rand: rnd, MaxCost: maxCost}
	for i, o := range os {
		dr.Orders[i] = dispatch.OrderInput{ID: o.ID, Key: o.Key}
	}
	return dr
}

// move applies pl, the plan of a batch of os, outstanding orders of from:
// each order goes to its new Scale (as its newest order) with Moves + 1,
// counted in the pool's Moved.
// was is from's place among the eligible Scales as the plan saw it (not
// there: the plan could not pick it). then, if set, runs before from takes
// its new place (it may change from's health). The caller keeps the plan's
// strategy state.
func (p *pool) move(from *scale, was slot, os []*order, pl plan, then func()) []dispatch.Move {
	all := make([]change, len(pl.scales))
	for i, to := range pl.scales {
		all[i] = change{from: to.load(), to: pl.slot(to).load, wasIn: true, isIn: true}
	}
	p.all.apply(all)
	prev := prior{sc: from, was: was}
	out := make([]dispatch.Move, len(os))
	for i, o := range os {
		to := p.scales[pl.compIDs[i]]
		from.unlink(o)
		p.push(to, o)
		o.Moves++
		out[i] = dispatch.Move{OrderID: o.ID, From: from.CompID, To: to.CompID}
	}
	p.counters.Moved += int64(len(os))
	if then != nil {
		then()
	}
	p.settle([]prior{prev})
	return out
}

// ListScaleOrders returns at most pg.Limit (dispatch.DefaultLimit if not
// positive) outstanding orders of the Scale, oldest first, after pg.Cursor,
// and the cursor of the next page ("" on the last page). ErrPoolNotFound,
// ErrScaleNotFound, ErrInvalidRequest (a cursor the store did not make).
func (s *Store) ListScaleOrders(_ context.Context, poolName, compID string, pg dispatch.Page) ([]dispatch.Order, string, error) {
	limit := pageLimit(pg)
	var out []dispatch.Order
	var next string
	err := s.read(poolName, func(p *pool) error {
		sc, ok := p.scales[compID]
		if !ok {
			return scaleNotFound(poolName, compID)
		}
		var after uint64
		if pg.Cursor != "" {
			v, err := strconv.ParseUint(pg.Cursor, 36, 64)
			if err != nil || v == 0 {
				return errorf(dispatch.ErrInvalidRequest, "cursor %q was not made by this list", pg.Cursor)
			}
			after = v
		}
		os := sc.oldest(-1)
		start, _ := slices.BinarySearchFunc(os, after+1, func(o *order, seq uint64) int {
			switch {
			case o.seq < seq:
				return -1
			case o.seq > seq:
				return 1
			}
			return 0
		})
		end := min(len(os), start+limit)
		out = make([]dispatch.Order, 0, end-start)
		for _, o := range os[start:end] {
			out = append(out, o.Order)
		}
		if end < len(os) {
			next = strconv.FormatUint(os[end-1].seq, 36)
		}
		return nil
	})
	return out, next, err
}
