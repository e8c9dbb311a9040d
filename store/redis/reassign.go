package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Reassign moves the outstanding orders of a down Scale to the pool's
// eligible Scales with the pool's strategy, as a batch of those orders,
// oldest first, would be assigned, all or none, in one script call. A call
// that go-redis re-sends after it ran answers with the first run's moves,
// which the script keeps under the call's token until the call's deadline.
// ErrPoolNotFound, ErrScaleNotFound, ErrScaleState, ErrNoEligibleScale,
// ErrUnknownStrategy, ErrTooExpensive, ErrUnavailable.
func (s *Store) Reassign(ctx context.Context, req dispatch.ReassignRequest) ([]dispatch.Assignment, error) {
	dr := dispatch.DispatchRequest{Orders: make([]dispatch.OrderInput, len(req.Rand)/2), Rand: req.Rand, MaxCost: req.MaxCost}
	tok := callToken(ctx)
	args, err := appendRand([]any{req.CompID, ms(req.Now), s.retention.Milliseconds(), maxCost(dr), tok}, dr, true)
	if err != nil {
		return nil, err
	}
	v, err := s.callToken(ctx, fnReassign, req.Pool, tok, args...)
	if err != nil {
		return nil, translate(err, req.Pool)
	}
	r, _ := v.([]any)
	if len(r)%2 != 0 {
		return nil, fmt.Errorf("redis: reassign replied %v", v)
	}
	out := make([]dispatch.Assignment, 0, len(r)/2)
	for i := 0; i < len(r); i += 2 {
		out = append(out, dispatch.Assignment{OrderID: asString(r[i]), CompID: asString(r[i+1])})
	}
	return out, nil
}

// ListScaleOrders returns at most p.Limit (dispatch.DefaultLimit if not
// positive) outstanding orders of the Scale, oldest first, after p.Cursor,
// and the cursor of the next page ("" on the last page). A cursor is
// opaque: "chunk+moves.orderId", the chunk of the Scale's own index, the
// last order returned and how often it had moved; one the store did not
// make is ErrInvalidRequest. An order that left the Scale between pages,
// or moved away and back, may make the next page repeat orders of its
// chunk, never skip one. ErrPoolNotFound, ErrScaleNotFound, ErrUnavailable.
func (s *Store) ListScaleOrders(ctx context.Context, pool, compID string, p dispatch.Page) ([]dispatch.Order, string, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = dispatch.DefaultLimit
	}
	chunk, moves, after := "", "", ""
	if p.Cursor != "" {
		var ok bool
		if chunk, after, ok = strings.Cut(p.Cursor, "."); ok {
			chunk, moves, ok = strings.Cut(chunk, "+")
		}
		_, err := strconv.ParseUint(chunk, 16, 52)
		_, merr := strconv.ParseUint(moves, 10, 52)
		if !ok || err != nil || merr != nil || !dispatch.ValidID(after) {
			return nil, "", errorf(dispatch.ErrInvalidRequest, "cursor %q was not made by this list", p.Cursor)
		}
	}
	v, err := s.call(ctx, fnScaleOrders, pool, compID, limit, chunk, moves, after)
	if err != nil {
		return nil, "", translate(err, pool)
	}
	r, _ := v.([]any)
	if len(r) < 2 || len(r)%2 != 0 {
		return nil, "", fmt.Errorf("redis: scale_orders replied %v", v)
	}
	out := make([]dispatch.Order, 0, (len(r)-2)/2)
	for i := 2; i < len(r); i += 2 {
		o, err := decodeOrder(asString(r[i]), asString(r[i+1]))
		if err != nil {
			return nil, "", err
		}
		out = append(out, o)
	}
	next := ""
	if asInt(r[0]) == 1 && len(out) > 0 {
		o := out[len(out)-1]
		next = asString(r[1]) + "+" + strconv.FormatInt(o.Moves, 10) + "." + o.ID
	}
	return out, next, nil
}
