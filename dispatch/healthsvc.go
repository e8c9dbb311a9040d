package dispatch

import (
	"context"
	"time"
)

// HealthObserver is told of every health change and every moved order,
// for metrics and logs. Changes come from the journal (each one reaches
// the observer of exactly one replica, the one whose tick took it); moves
// are told by the replica that made them. Its methods must be quick and
// safe for concurrent use.
type HealthObserver interface {
	// HealthChanged is one change of a Scale's health.
	HealthChanged(c HealthChange)
	// OrdersMoved is n orders of pool moved for reason.
	OrdersMoved(pool string, reason MoveReason, n int)
	// ChangesDropped is n changes of pool the journal dropped unreported.
	ChangesDropped(pool string, n int)
}

// Heartbeat renews a Scale's lease (see Store.Heartbeat), optionally
// reporting its orderCount as PutScale does, and returns the Scale as it
// stands. ErrInvalidID, ErrOutOfRange, ErrPoolNotFound, ErrScaleNotFound.
func (s *Service) Heartbeat(ctx context.Context, pool, compID string, orderCount *int64) (Scale, error) {
	if err := checkIDs("pool", pool, "compId", compID); err != nil {
		return Scale{}, err
	}
	if orderCount != nil {
		if err := checkRange("orderCount", *orderCount, 0, MaxOrderCount); err != nil {
			return Scale{}, err
		}
	}
	return s.store.Heartbeat(ctx, pool, compID, orderCount, s.now())
}

// FailInput is a failure report as the caller sent it.
type FailInput struct {
	Pool    string
	OrderID string
	// CompID is the Scale the caller could not hand the order to.
	CompID string
	// Reason is free text for the log (at most MaxReasonBytes).
	Reason string
}

// Fail handles a failure report (see FailRequest) and returns the order as
// it stands. ErrInvalidID, ErrInvalidReason and the errors of Store.Fail.
func (s *Service) Fail(ctx context.Context, in FailInput) (FailResult, error) {
	if err := checkIDs("pool", in.Pool, "orderId", in.OrderID); err != nil {
		return FailResult{}, err
	}
	if err := checkID("compId", in.CompID); err != nil {
		return FailResult{}, err
	}
	if err := checkReason(in.Reason); err != nil {
		return FailResult{}, err
	}
	r, err := s.store.Fail(ctx, FailRequest{
		Pool: in.Pool, OrderID: in.OrderID, CompID: in.CompID, Now: s.now(),
		Rand: []uint64{s.cfg.Rand(), s.cfg.Rand()}, MaxCost: s.cfg.MaxCost,
	})
	if err == nil && r.Moved && s.cfg.Health != nil {
		s.cfg.Health.OrdersMoved(in.Pool, MovedFail, 1)
	}
	return r, err
}

// view shows scales as the API does at now: health and failures judged at
// now under the pool's options (Store methods without a clock return them
// as recorded).
func (s *Service) view(ctx context.Context, pool string, scales []Scale) error {
	p, err := s.store.GetPool(ctx, pool)
	if err != nil {
		return err
	}
	now := s.now()
	for i := range scales {
		scales[i] = p.Health.View(scales[i], now)
	}
	return nil
}

// TickBudget bounds the time one round of health ticks spends on one pool,
// so that a pool with a large backlog does not hold the others up; the
// backlog continues in the next round.
const TickBudget = 500 * time.Millisecond

// TickPool does the health work of one pool at now (see TickRequest),
// calling Store.Tick while it reports More and the budget lasts, and tells
// the observer what happened. It returns whether the pool is pending when
// it stops: work left, or Scales not up. ErrInvalidID and the errors of
// Store.Tick.
func (s *Service) TickPool(ctx context.Context, pool string, budget time.Duration) (bool, error) {
	if err := checkID("pool", pool); err != nil {
		return false, err
	}
	start := time.Now()
	for {
		r, err := s.store.Tick(ctx, TickRequest{Pool: pool, Now: s.now(), Limit: DefaultTickLimit,
			RandSource: s.cfg.Rand, MaxCost: s.cfg.MaxCost})
		if err != nil {
			return false, err
		}
		if o := s.cfg.Health; o != nil {
			for _, c := range r.Changes {
				o.HealthChanged(c)
			}
			if len(r.Moves) > 0 {
				o.OrdersMoved(pool, MovedLapse, len(r.Moves))
			}
			if r.Dropped > 0 {
				o.ChangesDropped(pool, r.Dropped)
			}
		}
		if !r.More || time.Since(start) >= budget || ctx.Err() != nil {
			return r.More || r.Unsettled > 0, ctx.Err()
		}
	}
}
