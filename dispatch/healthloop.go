package dispatch

import (
	"context"
	"errors"
	"time"
)

// TickInterval is how often each replica ticks over the pools.
const TickInterval = time.Second

// TickRound ticks once over every pool whose health options are on, and
// over the pools of ticking: those that in the previous round had their
// options on, work left, or Scales not up (so that an ejection that ends
// after a pool turned its options off still reaches the observer). It
// returns the pools to carry into the next round, and the first error (the
// other pools are ticked all the same). A pool deleted meanwhile is
// skipped.
func (s *Service) TickRound(ctx context.Context, ticking map[string]bool) (map[string]bool, error) {
	next := make(map[string]bool)
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	pools := make(map[string]bool, len(ticking)) // name → options on
	for name := range ticking {
		pools[name] = false
	}
	page := Page{Limit: MaxLimit}
	for {
		ps, cursor, err := s.store.ListPools(ctx, page)
		if err != nil {
			keep(err)
			break
		}
		for _, p := range ps {
			if p.Health.On() {
				pools[p.Name] = true
			}
		}
		if cursor == "" {
			break
		}
		page.Cursor = cursor
	}
	for name := range pools {
		if ctx.Err() != nil {
			break
		}
		pending, err := s.TickPool(ctx, name, TickBudget)
		switch {
		case err == nil:
			if pending || pools[name] {
				next[name] = true
			}
		case errors.Is(err, ErrPoolNotFound):
		default:
			keep(err)
			next[name] = true
		}
	}
	return next, first
}

// RunHealth ticks over the pools every interval (TickInterval if not
// positive) until ctx ends, and hands each round's error to onErr (if
// set). It returns when ctx ends.
func (s *Service) RunHealth(ctx context.Context, interval time.Duration, onErr func(error)) {
	if interval <= 0 {
		interval = TickInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	ticking := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next, err := s.TickRound(ctx, ticking)
		if err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
		ticking = next
	}
}
