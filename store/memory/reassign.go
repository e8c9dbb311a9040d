package memory

import (
	"context"
	"slices"
	"strconv"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Reassign moves the outstanding orders of a down Scale to the pool's
// eligible Scales with the pool's strategy, as a batch of those orders, oldest
// first, would be assigned, all or none. ErrPoolNotFound, ErrScaleNotFound,
// ErrScaleState, ErrNoEligibleScale, ErrTooExpensive.
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
		os := sc.outstanding()
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
		dr := dispatch.DispatchRequest{
			Pool:    req.Pool,
			Orders:  make([]dispatch.OrderInput, len(os)),
			Now:     req.Now,
			Rand:    req.Rand,
			MaxCost: req.MaxCost,
		}
		for i, o := range os {
			dr.Orders[i] = dispatch.OrderInput{ID: o.ID, Key: o.Key}
		}
		pl, state, err := p.planBatch(dr)
		if err != nil {
			return err
		}
		// The plan's Scales move in the ranking of all Scales; the down
		// Scale, not eligible, moves in it alone.
		all := make([]change, len(pl.scales))
		for i, to := range pl.scales {
			all[i] = change{from: to.load(), to: pl.slot(to).load, wasIn: true, isIn: true}
		}
		p.all.apply(all)
		was := prior{sc: sc, was: sc.slot()}
		for i, o := range os {
			to := p.scales[pl.compIDs[i]]
			delete(sc.assigned, o.ID)
			sc.Outstanding--
			o.CompID = to.CompID
			p.seq++
			o.seq = p.seq
			to.assigned[o.ID] = o
			to.Outstanding++
			out = append(out, dispatch.Assignment{OrderID: o.ID, CompID: to.CompID})
		}
		p.settle([]prior{was})
		p.counters.Moved += n
		p.state = state
		p.sweep(req.Now)
		return nil
	})
	return out, err
}

// outstanding returns the Scale's assigned orders, oldest first.
func (sc *scale) outstanding() []*order {
	os := make([]*order, 0, len(sc.assigned))
	for _, o := range sc.assigned {
		os = append(os, o)
	}
	slices.SortFunc(os, func(a, b *order) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return os
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
		os := sc.outstanding()
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
