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
// opaque: "chunk+moves.orderId~prev~next~far~own", the chunk of the
// Scale's own index, the last order returned and how often it had moved,
// and anchors (scale_orders.lua): the entries of the index before and
// after that order's entry then, the nearest one of another batch before
// it, and the token it was listed through. So the next page goes on from
// the right place when the order has left: it lists no order again unless
// that order's entry and the anchors have all left (then, as with a
// cursor "chunk+moves.orderId" of the builds before the anchors, which is
// still read, orders of its chunk may be listed again). It never skips
// an order that stayed. A cursor the store did not make is
// ErrInvalidRequest. ErrPoolNotFound, ErrScaleNotFound, ErrUnavailable.
func (s *Store) ListScaleOrders(ctx context.Context, pool, compID string, p dispatch.Page) ([]dispatch.Order, string, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = dispatch.DefaultLimit
	}
	var c cursor
	if p.Cursor != "" {
		var ok bool
		if c, ok = parseCursor(p.Cursor); !ok {
			return nil, "", errorf(dispatch.ErrInvalidRequest, "cursor %q was not made by this list", p.Cursor)
		}
	}
	v, err := s.call(ctx, fnScaleOrders, pool, compID, limit, c.chunk, c.moves, c.after, c.anchors[0], c.anchors[1], c.anchors[2], c.anchors[3])
	if err != nil {
		return nil, "", translate(err, pool)
	}
	r, _ := v.([]any)
	const head = 6 // more, chunk and the four anchors
	if len(r) < head || (len(r)-head)%2 != 0 {
		return nil, "", fmt.Errorf("redis: scale_orders replied %v", v)
	}
	out := make([]dispatch.Order, 0, (len(r)-head)/2)
	for i := head; i < len(r); i += 2 {
		o, err := decodeOrder(asString(r[i]), asString(r[i+1]))
		if err != nil {
			return nil, "", err
		}
		out = append(out, o)
	}
	next := ""
	if asInt(r[0]) == 1 && len(out) > 0 {
		o := out[len(out)-1]
		next = asString(r[1]) + "+" + strconv.FormatInt(o.Moves, 10) + "." + o.ID +
			"~" + asString(r[2]) + "~" + asString(r[3]) + "~" + asString(r[4]) + "~" + asString(r[5])
	}
	return out, next, nil
}

// cursor is a cursor of ListScaleOrders as read: its chunk (hexadecimal),
// moves (decimal) and order id, and its anchors.
type cursor struct {
	chunk, moves, after string
	anchors             [4]string
}

// parseCursor reads a cursor of ListScaleOrders: "chunk+moves.orderId",
// and since the anchors "~prev~next~far~own" after it, each empty (unknown),
// "-" (none), "t" or "r" and a ref (hexadecimal), "a" and a time, or
// "i", moves, optionally "r" and a ref or "a" and a time, "." and an order
// id.
func parseCursor(s string) (c cursor, ok bool) {
	s, anchors, any := strings.Cut(s, "~")
	if any {
		a := strings.Split(anchors, "~")
		if len(a) != len(c.anchors) {
			return c, false
		}
		for i, x := range a {
			if !validAnchor(x) {
				return c, false
			}
			c.anchors[i] = x
		}
	}
	if c.chunk, c.after, ok = strings.Cut(s, "."); ok {
		c.chunk, c.moves, ok = strings.Cut(c.chunk, "+")
	}
	_, err := strconv.ParseUint(c.chunk, 16, 52)
	_, merr := strconv.ParseUint(c.moves, 10, 52)
	return c, ok && err == nil && merr == nil && dispatch.ValidID(c.after)
}

// validAnchor reports whether a is an anchor scale_orders.lua makes.
func validAnchor(a string) bool {
	if a == "" || a == "-" {
		return true
	}
	switch a[0] {
	case 't', 'r', 'a':
		return hexRef(a[1:])
	case 'i':
		mv, id, ok := strings.Cut(a[1:], ".")
		if k := strings.IndexAny(mv, "ra"); k >= 0 {
			if !hexRef(mv[k+1:]) {
				return false
			}
			mv = mv[:k]
		}
		_, err := strconv.ParseUint(mv, 10, 52)
		return ok && err == nil && dispatch.ValidID(id)
	}
	return false
}

// hexRef reports whether s is a ref or a time as the anchors write them:
// hexadecimal digits (a time may be decimal ones), 1 to 16.
func hexRef(s string) bool {
	_, err := strconv.ParseUint(s, 16, 64)
	return err == nil
}
