package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// GetOrder returns an order: ErrPoolNotFound, ErrOrderNotFound (also for
// one whose retention has passed at now, not yet swept), ErrUnavailable.
func (s *Store) GetOrder(ctx context.Context, pool, orderID string, now time.Time) (dispatch.Order, error) {
	v, err := s.call(ctx, fnRead, pool, "order", orderID, ms(now), s.retention.Milliseconds())
	if err != nil {
		return dispatch.Order{}, translate(err, pool)
	}
	return decodeOrder(orderID, asString(v))
}

// Complete completes the orders at now, all or none, and returns them in
// request order with the number that were assigned before. A completed
// order stays as it was. Each newly completed order's DurationMs (0: not
// reported) feeds its Scale's response-time average. ErrPoolNotFound,
// ErrOrderNotFound, ErrOrderState (a cancelled order), ErrUnavailable.
func (s *Store) Complete(ctx context.Context, pool string, cs []dispatch.Completion, now time.Time) ([]dispatch.Order, int, error) {
	tok := callToken(ctx)
	args := make([]any, 0, 4+2*len(cs))
	args = append(args, "c", ms(now), s.retention.Milliseconds(), tok)
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.OrderID
		args = append(args, c.OrderID, c.DurationMs)
	}
	return s.finish(ctx, pool, tok, ids, args)
}

// Cancel cancels an order at now; a cancelled order stays as it was.
// ErrPoolNotFound, ErrOrderNotFound, ErrOrderState (a completed order),
// ErrUnavailable.
func (s *Store) Cancel(ctx context.Context, pool, orderID string, now time.Time) (dispatch.Order, error) {
	os, _, err := s.finish(ctx, pool, "", []string{orderID},
		[]any{"x", ms(now), s.retention.Milliseconds(), "", orderID, 0})
	if err != nil {
		return dispatch.Order{}, err
	}
	return os[0], nil
}

// finish runs finish.lua with args, under call token tok ("" none).
func (s *Store) finish(ctx context.Context, pool, tok string, ids []string, args []any) ([]dispatch.Order, int, error) {
	v, err := s.callToken(ctx, fnFinish, pool, tok, args...)
	if err != nil {
		return nil, 0, translate(err, pool)
	}
	r, _ := v.([]any)
	if len(r) != len(ids)+1 {
		return nil, 0, fmt.Errorf("redis: finish replied %d values for %d orders", len(r), len(ids))
	}
	out := make([]dispatch.Order, len(ids))
	for i, id := range ids {
		if out[i], err = decodeOrder(id, asString(r[i+1])); err != nil {
			return nil, 0, err
		}
	}
	return out, int(asInt(r[0])), nil
}
