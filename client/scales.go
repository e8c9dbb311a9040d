package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
)

// PutScale registers the Scale compID in pool (defaults for absent
// members) or updates it (absent members keep their value) and returns it.
// Errors: ErrPoolNotFound, ErrOutOfRange, ErrPoolFull, ErrForbidden.
func (c *Client) PutScale(ctx context.Context, pool, compID string, in ScaleInput) (*Scale, error) {
	var s Scale
	if _, err := c.do(ctx, call{method: http.MethodPut, path: poolPath(pool, "scales", seg(compID)), body: in}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetScale returns one Scale; ErrPoolNotFound or ErrScaleNotFound.
func (c *Client) GetScale(ctx context.Context, pool, compID string) (*Scale, error) {
	var s Scale
	if err := c.get(ctx, poolPath(pool, "scales", seg(compID)), nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteScaleOptions changes DeleteScale.
type DeleteScaleOptions struct {
	// Force cancels the Scale's outstanding orders; without it a Scale
	// that has some is ErrScaleBusy.
	Force bool
}

// DeleteScale removes a Scale. Errors: ErrScaleBusy (outstanding orders,
// without Force), ErrPoolNotFound, ErrScaleNotFound.
func (c *Client) DeleteScale(ctx context.Context, pool, compID string, opts *DeleteScaleOptions) error {
	var q url.Values
	if opts != nil && opts.Force {
		q = url.Values{"force": {"true"}}
	}
	_, err := c.do(ctx, call{method: http.MethodDelete, path: poolPath(pool, "scales", seg(compID)), query: q, mode: retryRefused}, nil)
	return err
}

// ListScalesPage returns one page of the pool's Scales, sorted by
// orderCount, then compId.
func (c *Client) ListScalesPage(ctx context.Context, pool string, opts *ListOptions) (*ScaleList, error) {
	var l ScaleList
	if err := c.get(ctx, poolPath(pool, "scales"), opts.query(), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListScales yields every Scale of the pool, sorted by orderCount, then
// compId; it stops at the first error (ErrPoolNotFound).
func (c *Client) ListScales(ctx context.Context, pool string, opts *ListOptions) iter.Seq2[Scale, error] {
	return pages(ctx, opts, func(ctx context.Context, o *ListOptions) ([]Scale, string, error) {
		l, err := c.ListScalesPage(ctx, pool, o)
		if err != nil {
			return nil, "", err
		}
		return l.Scales, l.NextCursor, nil
	})
}

// ListScaleOrdersPage returns one page of the Scale's outstanding orders,
// oldest first.
func (c *Client) ListScaleOrdersPage(ctx context.Context, pool, compID string, opts *ListOptions) (*OrderList, error) {
	var l OrderList
	if err := c.get(ctx, poolPath(pool, "scales", seg(compID), "orders"), opts.query(), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListScaleOrders yields the Scale's outstanding orders, oldest first; it
// stops at the first error (ErrPoolNotFound, ErrScaleNotFound). Orders
// that change between pages may be skipped or repeated.
func (c *Client) ListScaleOrders(ctx context.Context, pool, compID string, opts *ListOptions) iter.Seq2[Order, error] {
	return pages(ctx, opts, func(ctx context.Context, o *ListOptions) ([]Order, string, error) {
		l, err := c.ListScaleOrdersPage(ctx, pool, compID, o)
		if err != nil {
			return nil, "", err
		}
		return l.Orders, l.NextCursor, nil
	})
}

// HeartbeatScale renews the Scale's lease: a lapsed Scale is up again. in
// may be nil. It never changes the Scale's state; a retry is harmless.
// Errors: ErrScaleNotFound, ErrOutOfRange (orderCount).
func (c *Client) HeartbeatScale(ctx context.Context, pool, compID string, in *HeartbeatInput) (*Scale, error) {
	var s Scale
	cl := call{method: http.MethodPost, path: poolPath(pool, "scales", seg(compID), "heartbeat")}
	if in != nil {
		cl.body = in
	}
	if _, err := c.do(ctx, cl, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ReassignScale moves every outstanding order of a down Scale to the
// pool's eligible Scales, all or none, and says where each went. Errors:
// ErrScaleState (the Scale is not down), ErrNoEligibleScale. A retry moves
// nothing twice.
func (c *Client) ReassignScale(ctx context.Context, pool, compID string) (*Reassignment, error) {
	var r Reassignment
	if _, err := c.do(ctx, call{method: http.MethodPost, path: poolPath(pool, "scales", seg(compID), "reassign")}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
