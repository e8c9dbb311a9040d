package memory

import (
	"context"
	"slices"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// PutPool creates the pool (strategy dispatch.DefaultStrategy unless spec
// sets one, CreatedAt now) or updates the fields spec sets, and reports
// whether it was created. Changing the strategy resets the strategy's state
// (setting the strategy the pool has already keeps it); response-time
// averages are the Scales' and stay.
func (s *Store) PutPool(_ context.Context, name string, spec dispatch.PoolSpec, now time.Time) (dispatch.Pool, bool, error) {
	var out dispatch.Pool
	err := s.write(name, func(p *pool) error {
		p.update(spec, now)
		p.sweep(now)
		out = p.info()
		return nil
	})
	if err == nil {
		return out, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pools[name]; ok {
		// Created by another request since the first look.
		p.mu.Lock()
		defer p.mu.Unlock()
		p.update(spec, now)
		p.sweep(now)
		return p.info(), false, nil
	}
	p := newPool(name, s.retention, now)
	p.update(spec, now)
	s.pools[name] = p
	s.insertName(name)
	return p.info(), true, nil
}

// update sets the fields spec sets at now.
func (p *pool) update(spec dispatch.PoolSpec, now time.Time) {
	p.health.Apply(spec, now)
	if spec.Strategy != nil && *spec.Strategy != p.strategy {
		p.strategy = *spec.Strategy
		p.resetStrategy()
	}
	if spec.SlowStart != nil {
		p.slowStart = *spec.SlowStart
	}
}

// GetPool returns the pool: ErrPoolNotFound.
func (s *Store) GetPool(_ context.Context, name string) (dispatch.Pool, error) {
	var out dispatch.Pool
	err := s.read(name, func(p *pool) error {
		out = p.info()
		return nil
	})
	return out, err
}

// ListPools returns at most pg.Limit pools (dispatch.DefaultLimit if it is
// not positive) sorted by name, after the name pg.Cursor, and the name of
// the last one as the next cursor ("" on the last page). With pg.Match,
// only the pools it accepts count.
func (s *Store) ListPools(_ context.Context, pg dispatch.Page) ([]dispatch.Pool, string, error) {
	limit := pageLimit(pg)
	s.mu.RLock()
	defer s.mu.RUnlock()
	start := 0
	if pg.Cursor != "" {
		var found bool
		start, found = slices.BinarySearch(s.names, pg.Cursor)
		if found {
			start++
		}
	}
	var out []dispatch.Pool
	for _, name := range s.names[start:] {
		if pg.Match != nil && !pg.Match(name) {
			continue
		}
		if len(out) == limit {
			return out, out[limit-1].Name, nil // one more follows
		}
		p := s.pools[name]
		p.mu.RLock()
		out = append(out, p.info())
		p.mu.RUnlock()
	}
	return out, "", nil
}

// DeletePool removes the pool and all its state: ErrPoolNotFound. It waits
// for the requests under way in any pool.
func (s *Store) DeletePool(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pools[name]; !ok {
		return poolNotFound(name)
	}
	delete(s.pools, name)
	s.removeName(name)
	return nil
}

func pageLimit(pg dispatch.Page) int {
	if pg.Limit <= 0 {
		return dispatch.DefaultLimit
	}
	return pg.Limit
}
