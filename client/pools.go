package client

import (
	"context"
	"iter"
	"net/http"
)

// PutPool creates the pool name (with in's members, defaults for the
// others) or updates it (absent members keep their value), and returns it.
// Errors: ErrUnknownStrategy, ErrOutOfRange, ErrInvalidID, ErrForbidden.
func (c *Client) PutPool(ctx context.Context, name string, in PoolInput) (*Pool, error) {
	var p Pool
	_, err := c.do(ctx, call{method: http.MethodPut, path: poolPath(name), body: in}, &p)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// GetPool returns the pool name; ErrPoolNotFound when there is none.
func (c *Client) GetPool(ctx context.Context, name string) (*Pool, error) {
	var p Pool
	if err := c.get(ctx, poolPath(name), nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeletePool removes the pool name and all its state; ErrPoolNotFound when
// there is none.
func (c *Client) DeletePool(ctx context.Context, name string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: poolPath(name), mode: retryRefused}, nil)
	return err
}

// ListPoolsPage returns one page of pools, sorted by name.
func (c *Client) ListPoolsPage(ctx context.Context, opts *ListOptions) (*PoolList, error) {
	var l PoolList
	if err := c.get(ctx, "/v1/pools", opts.query(), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// ListPools yields every pool, sorted by name, fetching pages of
// opts.Limit; it stops at the first error.
func (c *Client) ListPools(ctx context.Context, opts *ListOptions) iter.Seq2[Pool, error] {
	return pages(ctx, opts, func(ctx context.Context, o *ListOptions) ([]Pool, string, error) {
		l, err := c.ListPoolsPage(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Pools, l.NextCursor, nil
	})
}

// GetTable returns the pool's waterfill table as the next batch would start
// from it; ErrPoolNotFound when there is no such pool.
func (c *Client) GetTable(ctx context.Context, pool string) (*Table, error) {
	var t Table
	if err := c.get(ctx, poolPath(pool, "table"), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
