package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
)

// DispatchOptions changes Dispatch.
type DispatchOptions struct {
	// IdempotencyKey is sent as the Idempotency-Key header (an id, scoped
	// to the pool). Empty: Dispatch makes a random one for this call, so
	// that its own retries are safe; give one to make retries across
	// calls (or processes) safe too.
	IdempotencyKey string
}

// NewIdempotencyKey returns a random key (128 bits, hex) that matches the
// service's id pattern.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go ≥ 1.24 panics instead)
	return hex.EncodeToString(b[:])
}

// Dispatch assigns every order of in to one Scale of pool, atomically, and
// returns the batch with the assignments in request order.
//
// It always sends an Idempotency-Key and retries transport errors, 429 and
// 503 under the RetryPolicy with that key, so a batch is applied at most
// once however often the request is repeated. Errors: ErrOrderExists,
// ErrNoEligibleScale, ErrPoolNotFound, ErrEmptyBatch, ErrBatchTooLarge,
// ErrDuplicateOrder, ErrIdempotencyMismatch (the key was used for another
// request), ErrTooExpensive; ErrOutcomeUnknown when the retries ran out
// while the service could not say whether it applied the batch (its
// BatchID names it: GetBatch, or Dispatch again with the same key).
func (c *Client) Dispatch(ctx context.Context, pool string, in BatchInput, opts *DispatchOptions) (*Batch, error) {
	key := ""
	if opts != nil {
		key = opts.IdempotencyKey
	}
	if key == "" {
		key = NewIdempotencyKey()
	}
	var b Batch
	h := http.Header{"Idempotency-Key": {key}}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: poolPath(pool, "batches"), header: h, body: in}, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// DispatchDryRun runs every check of Dispatch and computes the assignments,
// but changes nothing (no Idempotency-Key: a dry run records nothing to
// replay).
func (c *Client) DispatchDryRun(ctx context.Context, pool string, in BatchInput) (*BatchPreview, error) {
	var p BatchPreview
	q := url.Values{"dryRun": {"true"}}
	if _, err := c.do(ctx, call{method: http.MethodPost, path: poolPath(pool, "batches"), query: q, body: in}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetBatch returns a recorded batch as first answered; ErrBatchNotFound
// when there is none (or it has left after its retention).
func (c *Client) GetBatch(ctx context.Context, pool, batchID string) (*Batch, error) {
	var b Batch
	if err := c.get(ctx, poolPath(pool, "batches", seg(batchID)), nil, &b); err != nil {
		return nil, err
	}
	return &b, nil
}
