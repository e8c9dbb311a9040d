package memory

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// PutScale registers the Scale (weight 1, active since now, no maxOrders,
// baseLoad spec.OrderCount or 0) or updates the fields spec sets, and reports
// whether it was registered. On an update, OrderCount X sets baseLoad to
// max(0, X − outstanding), and a Scale that becomes active is active since
// now. ErrPoolNotFound.
func (s *Store) PutScale(_ context.Context, poolName, compID string, spec dispatch.ScaleSpec, now time.Time) (dispatch.Scale, bool, error) {
	var out dispatch.Scale
	var created bool
	err := s.write(poolName, func(p *pool) error {
		sc, ok := p.scales[compID]
		if !ok {
			if len(p.scales) >= s.maxScales {
				return errorf(dispatch.ErrPoolFull, "pool %q holds %d Scales, the most a pool may", poolName, s.maxScales)
			}
			created = true
			sc = &scale{
				Scale:    dispatch.Scale{CompID: compID, Weight: 1, State: dispatch.Active, ActiveSince: now},
				assigned: make(map[string]*order),
			}
			dispatch.Register(&sc.Scale, now)
			sc.apply(spec, now)
			if sc.State != dispatch.Active {
				sc.ActiveSince = time.Time{} // never active yet
			}
			p.addScale(sc)
		} else {
			was := prior{sc: sc, was: sc.slot()}
			sc.apply(spec, now)
			p.settle([]prior{was})
		}
		p.sweep(now)
		out = sc.Scale
		return nil
	})
	return out, created, err
}

// apply sets the fields spec sets.
func (sc *scale) apply(spec dispatch.ScaleSpec, now time.Time) {
	if spec.Weight != nil {
		sc.Weight = *spec.Weight
	}
	if spec.MaxOrders != nil {
		sc.MaxOrders = *spec.MaxOrders
	}
	if spec.State != nil {
		if *spec.State == dispatch.Active && sc.State != dispatch.Active {
			sc.ActiveSince = now
		}
		sc.State = *spec.State
	}
	if spec.OrderCount != nil {
		sc.BaseLoad = max(0, *spec.OrderCount-sc.Outstanding)
	}
}

// GetScale returns the Scale: ErrPoolNotFound, ErrScaleNotFound.
func (s *Store) GetScale(_ context.Context, poolName, compID string) (dispatch.Scale, error) {
	var out dispatch.Scale
	err := s.read(poolName, func(p *pool) error {
		sc, ok := p.scales[compID]
		if !ok {
			return scaleNotFound(poolName, compID)
		}
		out = sc.Scale
		return nil
	})
	return out, err
}

// ListScales returns at most pg.Limit Scales (dispatch.DefaultLimit if it is
// not positive) sorted by orderCount, then compId, after pg.Cursor, and the
// cursor of the next page ("" on the last page). A cursor is opaque; one the
// store did not make is ErrInvalidRequest. ErrPoolNotFound.
func (s *Store) ListScales(_ context.Context, poolName string, pg dispatch.Page) ([]dispatch.Scale, string, error) {
	limit := pageLimit(pg)
	var out []dispatch.Scale
	var next string
	err := s.read(poolName, func(p *pool) error {
		start := 0
		if pg.Cursor != "" {
			l, err := decodeCursor(pg.Cursor)
			if err != nil {
				return err
			}
			start = p.all.after(l)
		}
		end := p.all.Len()
		if limit < end-start {
			end = start + limit
		}
		out = make([]dispatch.Scale, 0, end-start)
		if end > start {
			p.all.scan(start, func(l balancing.Load) bool {
				out = append(out, p.scales[l.ID].Scale)
				return len(out) < end-start
			})
		}
		if end < p.all.Len() {
			next = encodeCursor(p.all.At(end - 1))
		}
		return nil
	})
	return out, next, err
}

// encodeCursor makes the cursor that resumes a list after l.
func encodeCursor(l balancing.Load) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(l.Count, 10) + ":" + l.ID))
}

// decodeCursor reads a cursor of encodeCursor: ErrInvalidRequest.
func decodeCursor(c string) (balancing.Load, error) {
	bad := errorf(dispatch.ErrInvalidRequest, "cursor %q was not made by this list", c)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return balancing.Load{}, bad
	}
	count, id, ok := strings.Cut(string(raw), ":")
	if !ok || !dispatch.ValidID(id) {
		return balancing.Load{}, bad
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n < 0 {
		return balancing.Load{}, bad
	}
	return balancing.Load{ID: id, Count: n}, nil
}

// DeleteScale removes the Scale. While it has outstanding orders it fails
// with ErrScaleBusy unless force is set, which cancels them at now.
// ErrPoolNotFound, ErrScaleNotFound.
func (s *Store) DeleteScale(_ context.Context, poolName, compID string, force bool, now time.Time) error {
	return s.write(poolName, func(p *pool) error {
		sc, ok := p.scales[compID]
		if !ok {
			return scaleNotFound(poolName, compID)
		}
		if sc.Outstanding > 0 && !force {
			return errorf(dispatch.ErrScaleBusy, "scale %q has %d outstanding orders", compID, sc.Outstanding)
		}
		p.removeScale(sc)
		for _, o := range sc.assigned {
			p.finish(o, dispatch.Cancelled, now)
		}
		p.counters.Cancelled += int64(len(sc.assigned))
		p.sweepFor(now, len(sc.assigned))
		sc.assigned, sc.queue = nil, nil
		sc.Outstanding = 0
		return nil
	})
}

func scaleNotFound(poolName, compID string) error {
	return errorf(dispatch.ErrScaleNotFound, "scale %q in pool %q", compID, poolName)
}
