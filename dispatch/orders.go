package dispatch

import (
	"context"
	"errors"
	"fmt"
)

// DispatchInput is one batch as the client sent it.
type DispatchInput struct {
	Pool   string
	Orders []OrderInput
	// IdempotencyKey is optional. Fingerprint identifies the request the key
	// comes with (method, path, query and body): a retry with the same key
	// and fingerprint replays the first answer.
	IdempotencyKey string
	Fingerprint    string
	// DryRun computes the assignments and changes nothing.
	DryRun bool
}

// Dispatch validates a batch, gives ids to orders sent without one, and
// assigns it atomically with the pool's strategy. It returns the batch and
// whether it is a replay of an Idempotency-Key. ErrInvalidID, ErrInvalidKey,
// ErrInvalidRequest, ErrEmptyBatch, ErrBatchTooLarge, ErrDuplicateOrder, and
// the errors of Store.Dispatch.
func (s *Service) Dispatch(ctx context.Context, in DispatchInput) (Batch, bool, error) {
	req, err := s.prepare(in)
	if err != nil {
		return Batch{}, false, err
	}
	if s.coal != nil && !req.DryRun {
		r, sent := s.coal.dispatch(ctx, req)
		if !sent {
			return Batch{}, false, r.Err // never reached the store
		}
		return r.Batch, r.Replayed, indeterminate(req, r.Err)
	}
	b, replayed, err := s.store.Dispatch(ctx, req)
	return b, replayed, indeterminate(req, err)
}

// indeterminate returns the error of a store that failed to dispatch req.
// A store that failed may still have applied the batch (a reply lost,
// then a retry that could not connect), unless it says ErrNotSent: only
// here is the batch id known for every failure, so the caller always
// learns it.
func indeterminate(req DispatchRequest, err error) error {
	if _, ok := errors.AsType[*IndeterminateError](err); !ok && !req.DryRun && errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrNotSent) {
		err = &IndeterminateError{BatchID: req.BatchID, Err: err}
	}
	return err
}

func (s *Service) prepare(in DispatchInput) (DispatchRequest, error) {
	if err := checkID("pool", in.Pool); err != nil {
		return DispatchRequest{}, err
	}
	if in.IdempotencyKey != "" {
		if err := checkID("Idempotency-Key", in.IdempotencyKey); err != nil {
			return DispatchRequest{}, err
		}
		if in.DryRun {
			return DispatchRequest{}, errorf(ErrInvalidRequest, "dryRun cannot be combined with an Idempotency-Key")
		}
	}
	if len(in.Orders) == 0 {
		return DispatchRequest{}, errorf(ErrEmptyBatch, "a batch needs at least one order")
	}
	if len(in.Orders) > s.cfg.MaxBatch {
		return DispatchRequest{}, errorf(ErrBatchTooLarge, "%d orders, at most %d", len(in.Orders), s.cfg.MaxBatch)
	}
	// The request shares the input's orders unless one needs an id: then
	// it has a copy of them, which takes the ids made for it.
	orders, shared := in.Orders, true
	// A small batch looks for a repeated id among the ids before it; a
	// larger one keeps them in a map.
	var seen map[string]struct{}
	if len(in.Orders) > smallBatch {
		seen = make(map[string]struct{}, len(in.Orders))
	}
	for i, o := range in.Orders {
		if o.ID == "" {
			if shared {
				orders, shared = append([]OrderInput(nil), in.Orders...), false
			}
			o.ID = s.cfg.NewID()
			orders[i] = o
		} else if err := checkID("order id", o.ID); err != nil {
			return DispatchRequest{}, err
		}
		if o.Key != "" {
			if err := checkKey(o.Key); err != nil {
				return DispatchRequest{}, fmt.Errorf("order %q: %w", o.ID, err)
			}
		}
		if repeated(seen, orders[:i], o.ID) {
			return DispatchRequest{}, errorf(ErrDuplicateOrder, "order %q appears more than once", o.ID)
		}
	}
	req := DispatchRequest{
		Pool:           in.Pool,
		Orders:         orders,
		UniqueIDs:      true,
		Now:            s.now(),
		RandSource:     s.cfg.Rand,
		IdempotencyKey: in.IdempotencyKey,
		Fingerprint:    in.Fingerprint,
		IdempotencyTTL: s.cfg.IdempotencyTTL,
		DryRun:         in.DryRun,
		MaxCost:        s.cfg.MaxCost,
	}
	if !in.DryRun {
		if s.namer != nil {
			req.BatchID = s.namer.BatchID(req)
		}
		if req.BatchID == "" {
			req.BatchID = s.cfg.NewID()
		}
	}
	return req, nil
}

// RepeatedOrder returns the first id of orders that an order before it
// already has, and whether there is one: the id Service.Dispatch refuses
// with ErrDuplicateOrder, for a store that checks a request itself before
// it sends it on.
func RepeatedOrder(orders []OrderInput) (string, bool) {
	var seen map[string]struct{}
	if len(orders) > smallBatch {
		seen = make(map[string]struct{}, len(orders))
	}
	for i := range orders {
		if id := orders[i].ID; repeated(seen, orders[:i], id) {
			return id, true
		}
	}
	return "", false
}

// smallBatch is the most orders prepare checks for repeated ids without
// a map.
const smallBatch = 16

// repeated reports whether id is among the ids of before, which seen holds
// when it is not nil, and adds it to seen.
func repeated(seen map[string]struct{}, before []OrderInput, id string) bool {
	if seen == nil {
		for _, o := range before {
			if o.ID == id {
				return true
			}
		}
		return false
	}
	// One map operation, not a look-up and then an insert: an id already
	// there leaves the map's length as it was.
	n := len(seen)
	seen[id] = struct{}{}
	return len(seen) == n
}

// CompleteOrder completes one order; durationMs (0 when absent) feeds
// weighted-response-time. Completing it again changes nothing.
// ErrInvalidID, ErrOutOfRange, ErrPoolNotFound, ErrOrderNotFound,
// ErrOrderState.
func (s *Service) CompleteOrder(ctx context.Context, pool, orderID string, durationMs int64) (Order, error) {
	if err := checkIDs("pool", pool, "orderId", orderID); err != nil {
		return Order{}, err
	}
	orders, _, err := s.complete(ctx, pool, []Completion{{OrderID: orderID, DurationMs: durationMs}})
	if err != nil {
		return Order{}, err
	}
	return orders[0], nil
}

// Complete completes many orders atomically and returns how many were not
// completed before. ErrInvalidID, ErrEmptyBatch, ErrBatchTooLarge,
// ErrDuplicateOrder, ErrOutOfRange, and the errors of Store.Complete.
func (s *Service) Complete(ctx context.Context, pool string, cs []Completion) (int, error) {
	if err := checkID("pool", pool); err != nil {
		return 0, err
	}
	if len(cs) == 0 {
		return 0, errorf(ErrEmptyBatch, "no orders to complete")
	}
	if len(cs) > s.cfg.MaxBatch {
		return 0, errorf(ErrBatchTooLarge, "%d orders, at most %d", len(cs), s.cfg.MaxBatch)
	}
	seen := make(map[string]struct{}, len(cs))
	for _, c := range cs {
		if err := checkID("order id", c.OrderID); err != nil {
			return 0, err
		}
		if _, dup := seen[c.OrderID]; dup {
			return 0, errorf(ErrDuplicateOrder, "order %q appears more than once", c.OrderID)
		}
		seen[c.OrderID] = struct{}{}
	}
	_, n, err := s.complete(ctx, pool, cs)
	return n, err
}

func (s *Service) complete(ctx context.Context, pool string, cs []Completion) ([]Order, int, error) {
	for _, c := range cs {
		if err := checkRange("durationMs", c.DurationMs, 0, MaxOrderCount); err != nil {
			return nil, 0, err
		}
	}
	return s.store.Complete(ctx, pool, cs, s.now())
}

// CancelOrder cancels one order; cancelling it again changes nothing.
// ErrInvalidID, ErrPoolNotFound, ErrOrderNotFound, ErrOrderState.
func (s *Service) CancelOrder(ctx context.Context, pool, orderID string) (Order, error) {
	if err := checkIDs("pool", pool, "orderId", orderID); err != nil {
		return Order{}, err
	}
	return s.store.Cancel(ctx, pool, orderID, s.now())
}
