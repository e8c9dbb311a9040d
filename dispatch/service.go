package dispatch

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
)

// Config tunes a Service. Zero fields take the defaults below.
type Config struct {
	// MaxBatch is the most orders one batch may hold (default 10000).
	MaxBatch int
	// MaxCost caps eligible Scales × orders per call for the strategies that
	// cost O(N) per order (default 10^7).
	MaxCost int64
	// IdempotencyTTL is how long an Idempotency-Key, and the batch it
	// replays, are remembered (default DefaultIdempotencyTTL).
	IdempotencyTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand returns uniform integers in [0, 2^53) (default math/rand/v2),
	// from any goroutine: a dispatch's numbers are drawn by its store,
	// and only for a pool whose strategy draws (DispatchRequest.Randoms).
	Rand func() uint64
	// NewID returns a fresh id for batches and orders sent without one
	// (default UUIDv7). Unless it is set, a Store that is a BatchNamer
	// names the batches.
	NewID func() string
	// NoCoalesce sends every batch in its own store call. By default, when
	// the Store is a MultiDispatcher, the concurrent batches of one pool
	// share calls (see MultiDispatcher).
	NoCoalesce bool
	// CoalesceCalls is how many store calls of one pool may be in flight
	// at once when coalescing (default DefaultCoalesceCalls). Batches that
	// arrive while all are busy wait and share the next call.
	CoalesceCalls int
	// ObserveCoalesced, if set, is told how many batches every store call
	// that coalesced dispatches make carried.
	ObserveCoalesced func(batches int)
	// Health, if set, is told of health changes and moved orders.
	Health HealthObserver
}

// Defaults of Config.
const (
	DefaultMaxBatch       = 10000
	DefaultMaxCost        = 10_000_000
	DefaultIdempotencyTTL = 24 * time.Hour
)

// Service is the dispatcher's core: it validates requests, supplies the
// clock, ids and randomness, and runs each operation as one atomic call of
// its Store. It is safe for concurrent use.
type Service struct {
	store Store
	cfg   Config
	coal  *coalescer // nil: every batch in its own call
	namer BatchNamer // nil: NewID names every batch
}

// NewService returns a Service over store. It panics if store is nil.
func NewService(store Store, cfg Config) *Service {
	if store == nil {
		panic("dispatch: NewService with a nil Store")
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxCost <= 0 {
		cfg.MaxCost = DefaultMaxCost
	}
	if cfg.CoalesceCalls <= 0 {
		cfg.CoalesceCalls = DefaultCoalesceCalls
	}
	if cfg.IdempotencyTTL <= 0 {
		cfg.IdempotencyTTL = DefaultIdempotencyTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		// The low 53 bits of the runtime's generator, as Uint64N(1<<53)
		// takes them, without its look-up of the global Rand's source.
		cfg.Rand = func() uint64 { return rand.Uint64() & (1<<53 - 1) }
	}
	var namer BatchNamer
	if cfg.NewID == nil {
		cfg.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
		namer, _ = store.(BatchNamer)
	}
	s := &Service{store: store, cfg: cfg, namer: namer}
	if md, ok := store.(MultiDispatcher); ok && !cfg.NoCoalesce {
		s.coal = &coalescer{store: md, single: store.Dispatch, maxOrders: cfg.MaxBatch,
			maxCalls: cfg.CoalesceCalls, observe: cfg.ObserveCoalesced, pools: map[string]*queue{}}
	}
	return s
}

// MaxBatch is the most orders one batch may hold.
func (s *Service) MaxBatch() int { return s.cfg.MaxBatch }

// now is the clock in UTC milliseconds, the resolution every store keeps,
// so that both stores answer the same times.
func (s *Service) now() time.Time { return s.cfg.Now().UTC().Truncate(time.Millisecond) }

// PutPool creates or updates a pool and reports whether it was created.
// ErrInvalidID, ErrUnknownStrategy, ErrOutOfRange.
func (s *Service) PutPool(ctx context.Context, name string, spec PoolSpec) (Pool, bool, error) {
	if err := checkID("pool", name); err != nil {
		return Pool{}, false, err
	}
	if err := checkPoolSpec(spec); err != nil {
		return Pool{}, false, err
	}
	return s.store.PutPool(ctx, name, spec, s.now())
}

// GetPool returns a pool: ErrInvalidID, ErrPoolNotFound.
func (s *Service) GetPool(ctx context.Context, name string) (Pool, error) {
	if err := checkID("pool", name); err != nil {
		return Pool{}, err
	}
	return s.store.GetPool(ctx, name)
}

// ListPools returns one page of pools sorted by name, and the next cursor.
// ErrInvalidID (cursor), ErrOutOfRange (limit).
func (s *Service) ListPools(ctx context.Context, p Page) ([]Pool, string, error) {
	p, err := normalizePage(p)
	if err != nil {
		return nil, "", err
	}
	if p.Cursor != "" {
		if err := checkID("cursor", p.Cursor); err != nil {
			return nil, "", err
		}
	}
	return s.store.ListPools(ctx, p)
}

// DeletePool removes a pool and all its state: ErrInvalidID, ErrPoolNotFound.
func (s *Service) DeletePool(ctx context.Context, name string) error {
	if err := checkID("pool", name); err != nil {
		return err
	}
	return s.store.DeletePool(ctx, name)
}

// PutScale registers or updates a Scale and reports whether it was
// registered. ErrInvalidID, ErrOutOfRange, ErrInvalidState, ErrPoolNotFound.
func (s *Service) PutScale(ctx context.Context, pool, compID string, spec ScaleSpec) (Scale, bool, error) {
	if err := checkIDs("pool", pool, "compId", compID); err != nil {
		return Scale{}, false, err
	}
	if err := checkScaleSpec(spec); err != nil {
		return Scale{}, false, err
	}
	sc, created, err := s.store.PutScale(ctx, pool, compID, spec, s.now())
	if err != nil {
		return Scale{}, false, err
	}
	out := []Scale{sc}
	if err := s.view(ctx, pool, out); err != nil {
		return Scale{}, false, err
	}
	return out[0], created, nil
}

// GetScale returns a Scale: ErrInvalidID, ErrPoolNotFound, ErrScaleNotFound.
func (s *Service) GetScale(ctx context.Context, pool, compID string) (Scale, error) {
	if err := checkIDs("pool", pool, "compId", compID); err != nil {
		return Scale{}, err
	}
	sc, err := s.store.GetScale(ctx, pool, compID)
	if err != nil {
		return Scale{}, err
	}
	out := []Scale{sc}
	if err := s.view(ctx, pool, out); err != nil {
		return Scale{}, err
	}
	return out[0], nil
}

// ListScales returns one page of a pool's Scales sorted by orderCount, then
// compId. ErrInvalidID, ErrOutOfRange, ErrInvalidRequest (cursor),
// ErrPoolNotFound.
func (s *Service) ListScales(ctx context.Context, pool string, p Page) ([]Scale, string, error) {
	if err := checkID("pool", pool); err != nil {
		return nil, "", err
	}
	p, err := normalizePage(p)
	if err != nil {
		return nil, "", err
	}
	scales, next, err := s.store.ListScales(ctx, pool, p)
	if err != nil {
		return nil, "", err
	}
	if err := s.view(ctx, pool, scales); err != nil {
		return nil, "", err
	}
	return scales, next, nil
}

// DeleteScale removes a Scale; see Store.DeleteScale. ErrInvalidID,
// ErrPoolNotFound, ErrScaleNotFound, ErrScaleBusy.
func (s *Service) DeleteScale(ctx context.Context, pool, compID string, force bool) error {
	if err := checkIDs("pool", pool, "compId", compID); err != nil {
		return err
	}
	return s.store.DeleteScale(ctx, pool, compID, force, s.now())
}

// Reassign re-dispatches the outstanding orders of a down Scale to the
// pool's eligible Scales with the pool's strategy, atomically, and returns
// where each went (CompID the new Scale), oldest first. ErrInvalidID and the
// errors of Store.Reassign.
func (s *Service) Reassign(ctx context.Context, pool, compID string) ([]Assignment, error) {
	if err := checkIDs("pool", pool, "compId", compID); err != nil {
		return nil, err
	}
	sc, err := s.store.GetScale(ctx, pool, compID)
	if err != nil {
		return nil, err
	}
	if sc.State != Down {
		return nil, errorf(ErrScaleState, "scale %q is %s, not down", compID, sc.State)
	}
	rnd := make([]uint64, 2*sc.Outstanding)
	for i := range rnd {
		rnd[i] = s.cfg.Rand()
	}
	moved, err := s.store.Reassign(ctx, ReassignRequest{
		Pool: pool, CompID: compID, Now: s.now(), Rand: rnd, MaxCost: s.cfg.MaxCost,
	})
	if err == nil && len(moved) > 0 && s.cfg.Health != nil {
		s.cfg.Health.OrdersMoved(pool, MovedReassign, len(moved))
	}
	return moved, err
}

// ListScaleOrders returns one page of a Scale's outstanding orders, oldest
// first. ErrInvalidID, ErrOutOfRange, ErrInvalidRequest (cursor),
// ErrPoolNotFound, ErrScaleNotFound.
func (s *Service) ListScaleOrders(ctx context.Context, pool, compID string, p Page) ([]Order, string, error) {
	if err := checkIDs("pool", pool, "compId", compID); err != nil {
		return nil, "", err
	}
	p, err := normalizePage(p)
	if err != nil {
		return nil, "", err
	}
	return s.store.ListScaleOrders(ctx, pool, compID, p)
}

// GetBatch returns a recorded batch: ErrInvalidID, ErrPoolNotFound,
// ErrBatchNotFound.
func (s *Service) GetBatch(ctx context.Context, pool, batchID string) (Batch, error) {
	if err := checkIDs("pool", pool, "batchId", batchID); err != nil {
		return Batch{}, err
	}
	return s.store.GetBatch(ctx, pool, batchID, s.now())
}

// GetOrder returns an order: ErrInvalidID, ErrPoolNotFound, ErrOrderNotFound.
func (s *Service) GetOrder(ctx context.Context, pool, orderID string) (Order, error) {
	if err := checkIDs("pool", pool, "orderId", orderID); err != nil {
		return Order{}, err
	}
	return s.store.GetOrder(ctx, pool, orderID, s.now())
}

// Table returns the waterfill table the next batch would start from.
// ErrInvalidID, ErrPoolNotFound.
func (s *Service) Table(ctx context.Context, pool string) (Table, error) {
	if err := checkID("pool", pool); err != nil {
		return Table{}, err
	}
	return s.store.Table(ctx, pool)
}

// Ready reports whether the store is reachable.
func (s *Service) Ready(ctx context.Context) error { return s.store.Ping(ctx) }

func checkIDs(kind1, id1, kind2, id2 string) error {
	if err := checkID(kind1, id1); err != nil {
		return err
	}
	return checkID(kind2, id2)
}
