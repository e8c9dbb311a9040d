package dispatch

import (
	"context"
	"time"
)

// Store keeps all state of all pools. Every method is one atomic operation:
// it validates everything it needs before its first change and applies all or
// nothing. Stores translate their driver errors into the errors of this
// package: ErrUnavailable (or *IndeterminateError for a dispatch that may have
// been applied) when the backend cannot be reached.
type Store interface {
	// PutPool creates the pool or updates the fields spec sets, and reports
	// whether it was created. Changing the strategy resets its state. A
	// new pool's Health starts from DefaultHealthOptions; the health
	// options change by HealthOptions.Apply at now. PutPool settles no
	// Scale: a change of options takes effect in the Scales' health as the
	// next calls settle them.
	PutPool(ctx context.Context, name string, spec PoolSpec, now time.Time) (Pool, bool, error)
	// GetPool returns the pool, or ErrPoolNotFound.
	GetPool(ctx context.Context, name string) (Pool, error)
	// ListPools returns pools sorted by name after p.Cursor, and the cursor of
	// the next page ("" on the last page).
	ListPools(ctx context.Context, p Page) ([]Pool, string, error)
	// DeletePool removes the pool and all its state, or ErrPoolNotFound.
	DeletePool(ctx context.Context, name string) error

	// PutScale registers the Scale or updates the fields spec sets, and
	// reports whether it was registered. Registering sets the Scale up with
	// its lease starting at now (Register). ErrPoolNotFound.
	PutScale(ctx context.Context, pool, compID string, spec ScaleSpec, now time.Time) (Scale, bool, error)
	// GetScale returns the Scale, its health as recorded (the Service
	// shows HealthOptions.View): ErrPoolNotFound, ErrScaleNotFound.
	GetScale(ctx context.Context, pool, compID string) (Scale, error)
	// ListScales returns Scales sorted by orderCount, then compId, after
	// p.Cursor (a value the store returned before, else ErrInvalidRequest),
	// and the next cursor ("" on the last page). ErrPoolNotFound.
	ListScales(ctx context.Context, pool string, p Page) ([]Scale, string, error)
	// DeleteScale removes the Scale. With outstanding orders it fails with
	// ErrScaleBusy unless force is set, which cancels them at now.
	// ErrPoolNotFound, ErrScaleNotFound.
	DeleteScale(ctx context.Context, pool, compID string, force bool, now time.Time) error

	// Dispatch assigns a batch with the pool's strategy and records it (see
	// DispatchRequest). It returns the batch and whether it is a replay of an
	// earlier request with the same Idempotency-Key. A request whose BatchID
	// is already recorded returns that batch unchanged, so a retried call
	// counts once. ErrPoolNotFound, ErrOrderExists, ErrNoEligibleScale,
	// ErrIdempotencyMismatch, ErrTooExpensive.
	//
	// Before it picks, Dispatch (a dry run too, and each batch of
	// DispatchMany) settles every Scale of the pool that is due at req.Now
	// (see "Settling" in the package doc of health), so that no order goes
	// to a Scale whose lease has run out, even if no Tick has run.
	Dispatch(ctx context.Context, req DispatchRequest) (Batch, bool, error)
	// GetBatch returns a recorded batch: ErrPoolNotFound, ErrBatchNotFound
	// (also for a batch whose time has passed at now, even if not yet
	// removed).
	GetBatch(ctx context.Context, pool, batchID string, now time.Time) (Batch, error)
	// GetOrder returns an order: ErrPoolNotFound, ErrOrderNotFound (also
	// for an order whose retention has passed at now, even if not yet
	// removed).
	GetOrder(ctx context.Context, pool, orderID string, now time.Time) (Order, error)
	// Complete completes the orders at now, all or none, and returns them in
	// request order with the number that were not completed before.
	// Completing a completed order changes nothing. ErrPoolNotFound,
	// ErrOrderNotFound, ErrOrderState (a cancelled order).
	Complete(ctx context.Context, pool string, cs []Completion, now time.Time) ([]Order, int, error)
	// Cancel cancels an order at now; cancelling a cancelled order changes
	// nothing. ErrPoolNotFound, ErrOrderNotFound, ErrOrderState (a completed
	// order).
	Cancel(ctx context.Context, pool, orderID string, now time.Time) (Order, error)
	// Reassign moves every outstanding (assigned) order of Scale
	// req.CompID, which must be down, to the pool's eligible Scales with the
	// pool's strategy, as a batch of those orders would be assigned (the
	// strategy's state advances as for that batch), all or none. The orders
	// are taken in order of assignment, oldest first, and each keeps its
	// id, batch, key and assignedAt; it is appended to its new Scale's
	// orders. It returns the moves in that order (CompID the new Scale); a
	// down Scale without outstanding orders gives none. ErrPoolNotFound,
	// ErrScaleNotFound, ErrScaleState (not down), ErrNoEligibleScale (no
	// room for all of them), ErrTooExpensive. Like Dispatch it settles the
	// pool's due Scales first; every moved order's Moves grows by one.
	Reassign(ctx context.Context, req ReassignRequest) ([]Assignment, error)
	// Heartbeat renews the Scale's lease at now. In this order: it settles
	// the Scale at now with its old lease (a lapse that no call noticed
	// yet is recorded), sets LastHeartbeatAt = now, applies orderCount as
	// PutScale does (nil: unchanged), and settles the Scale again (a lapsed
	// Scale is up again, or ejected if its ejection has not ended). It
	// never changes State. It returns the Scale as HealthOptions.View at
	// now shows it. ErrPoolNotFound, ErrScaleNotFound.
	Heartbeat(ctx context.Context, pool, compID string, orderCount *int64, now time.Time) (Scale, error)
	// Fail handles a failure report (see FailRequest): ErrPoolNotFound,
	// ErrOrderNotFound, ErrNoEligibleScale (nothing changed, nothing
	// counted), ErrTooExpensive.
	Fail(ctx context.Context, req FailRequest) (FailResult, error)
	// Tick does a bounded share of a pool's health work at req.Now (see
	// TickRequest); callers call again while the result says More.
	// ErrPoolNotFound.
	Tick(ctx context.Context, req TickRequest) (TickResult, error)

	// ListScaleOrders returns the outstanding orders of a Scale in order of
	// assignment (oldest first) after p.Cursor (a value the store returned
	// before, else ErrInvalidRequest), and the next cursor ("" on the last
	// page). Orders that change between pages may be skipped or repeated.
	// ErrPoolNotFound, ErrScaleNotFound.
	ListScaleOrders(ctx context.Context, pool, compID string, p Page) ([]Order, string, error)
	// Table returns the waterfill table over the pool's eligible Scales,
	// by their recorded health (it settles nothing). ErrPoolNotFound.
	Table(ctx context.Context, pool string) (Table, error)
	// Snapshot reads the pool, its counters and its Scales in one atomic
	// read: every Scale if there are at most 2 × edge, else the edge lowest
	// and the edge highest by (orderCount, compId) and a histogram of all
	// of them in buckets buckets of HistogramWidth. It leaves At zero.
	// ErrPoolNotFound.
	Snapshot(ctx context.Context, pool string, edge, buckets int) (Snapshot, error)

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// BatchNamer is a Store that names batches itself: the Service asks it for
// the id of every batch that is not a dry run, unless Config.NewID is set,
// and takes NewID's id when it answers "". The Redis store names a batch
// after its first order, so that the order's record finds the batch and a
// batch needs no record of its own (store/redis, batchid.go).
type BatchNamer interface {
	// BatchID returns a new id for the batch of req, whose BatchID is
	// unset, or "": an id no batch of the pool had before, valid (ValidID).
	BatchID(req DispatchRequest) string
}

// DispatchRequest is one batch, validated and completed by the Service.
type DispatchRequest struct {
	Pool    string
	BatchID string
	// Orders all have ids, unique within the batch.
	Orders []OrderInput
	// UniqueIDs says that the Service has checked that no two orders share
	// an id (RepeatedOrder), so that a store need not check it again. A
	// request without it is checked by the store (ErrDuplicateOrder).
	UniqueIDs bool
	Now       time.Time
	// Rand holds two uniform integers in [0, 2^53) per order, for the
	// strategies that draw at random (balancing.Strategy.Random); numbers
	// it lacks count as 0. The Service leaves it nil and sets RandSource
	// instead, so that the numbers are made only for a pool whose strategy
	// draws: a store takes them with Randoms.
	Rand []uint64
	// RandSource, when Rand is nil, draws the numbers: one uniform integer
	// in [0, 2^53) a call (Config.Rand).
	RandSource func() uint64
	// IdempotencyKey, when set, makes the store replay the batch recorded
	// under it if Fingerprint matches, and fail with ErrIdempotencyMismatch
	// if it does not. The record lives IdempotencyTTL.
	IdempotencyKey string
	Fingerprint    string
	IdempotencyTTL time.Duration
	// DryRun validates and computes the assignments without changing
	// anything; the returned batch has no ID.
	DryRun bool
	// MaxCost caps eligible Scales × orders for the strategies that cost
	// O(N) per order (ErrTooExpensive beyond it).
	MaxCost int64
}

// Randoms returns the random numbers of req, two per order: Rand if it is
// set, else numbers RandSource draws now, else nil (numbers that count as
// 0). A store calls it when, and only when, the pool's strategy draws.
func (req *DispatchRequest) Randoms() []uint64 {
	if req.Rand != nil || req.RandSource == nil {
		return req.Rand
	}
	rnd := make([]uint64, 2*len(req.Orders))
	for i := range rnd {
		rnd[i] = req.RandSource()
	}
	return rnd
}

// ReassignRequest re-dispatches the outstanding orders of a down Scale (see
// Store.Reassign), validated and completed by the Service.
type ReassignRequest struct {
	Pool   string
	CompID string
	Now    time.Time
	// Rand holds two uniform integers in [0, 2^53) per order, as for a
	// dispatch, for the Scale's outstanding orders in order of assignment;
	// numbers it lacks (orders that arrived since the Service counted them)
	// count as 0.
	Rand []uint64
	// MaxCost caps eligible Scales × orders as for a dispatch.
	MaxCost int64
}

// MultiDispatcher is a Store that can apply several batches of one pool in
// one call, which the Service uses to coalesce concurrent dispatches.
type MultiDispatcher interface {
	// DispatchMany applies reqs, all of one pool and none a dry run, one
	// after another as Dispatch would in that order: each batch is all or
	// nothing and sees the batches before it. It returns one result per
	// request, in order. A failure of the call itself fails every request
	// as Dispatch would fail (ErrUnavailable, *IndeterminateError).
	DispatchMany(ctx context.Context, reqs []DispatchRequest) []DispatchResult
}

// DispatchResult is the outcome of one request of DispatchMany: what
// Dispatch would have returned for it.
type DispatchResult struct {
	Batch    Batch
	Replayed bool
	Err      error
}
