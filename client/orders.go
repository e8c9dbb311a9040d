package client

import (
	"context"
	"net/http"
)

// GetOrder returns one order; ErrOrderNotFound when there is none (or it
// has left after its retention).
func (c *Client) GetOrder(ctx context.Context, pool, orderID string) (*Order, error) {
	var o Order
	if err := c.get(ctx, orderPath(pool, orderID), nil, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// CompleteOrder completes an order and lowers its Scale's load once:
// completing a completed order changes nothing. in may be nil. Errors:
// ErrOrderState (the order was cancelled), ErrOrderNotFound.
func (c *Client) CompleteOrder(ctx context.Context, pool, orderID string, in *CompleteInput) (*Order, error) {
	var o Order
	cl := call{method: http.MethodPost, path: orderPath(pool, orderID) + "/complete"}
	if in != nil {
		cl.body = in
	}
	if _, err := c.do(ctx, cl, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// CancelOrder cancels an order and lowers its Scale's load once:
// cancelling a cancelled order changes nothing. Errors: ErrOrderState (the
// order was completed), ErrOrderNotFound.
func (c *Client) CancelOrder(ctx context.Context, pool, orderID string) (*Order, error) {
	var o Order
	if _, err := c.do(ctx, call{method: http.MethodPost, path: orderPath(pool, orderID) + "/cancel"}, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// FailOrder reports that the order could not be handed to the Scale
// in.CompID. If the order is still there it moves to another eligible Scale
// and the report counts against in.CompID; if not, nothing changes, so a
// retry is harmless. It returns the order as it stands. Errors:
// ErrNoEligibleScale (nowhere to move it; nothing changed),
// ErrOrderNotFound, ErrInvalidID (no compId).
func (c *Client) FailOrder(ctx context.Context, pool, orderID string, in FailInput) (*Order, error) {
	var o Order
	if _, err := c.do(ctx, call{method: http.MethodPost, path: orderPath(pool, orderID) + "/fail", body: in}, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// CompleteOrders completes the orders of in atomically, all or none, and
// counts those that were not completed before. It is repeated only on
// answers that say nothing was applied, since a repeat would count
// differently. Errors: ErrOrderNotFound, ErrOrderState, ErrDuplicateOrder.
func (c *Client) CompleteOrders(ctx context.Context, pool string, in CompletionsInput) (*Completed, error) {
	var n Completed
	if _, err := c.do(ctx, call{method: http.MethodPost, path: poolPath(pool, "completions"), body: in, mode: retryRefused}, &n); err != nil {
		return nil, err
	}
	return &n, nil
}

// orderPath is the path of one order.
func orderPath(pool, orderID string) string { return poolPath(pool, "orders", seg(orderID)) }
