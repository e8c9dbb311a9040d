package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds how a Client repeats a call that failed in a way that
// may pass: a transport error, 429 or 503.
//
// Attempt n (from 0) waits a random time in [d/2, d], d = min(MaxDelay,
// BaseDelay·2ⁿ), so that clients refused together do not return together;
// an answer's Retry-After raises the wait to at least that long. A wait
// that would end after the context's deadline is not begun: the call
// returns the last error at once.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 1 turns retries off.
	MaxAttempts int
	// BaseDelay is the wait before the first retry, before jitter.
	BaseDelay time.Duration
	// MaxDelay caps the backoff (not a Retry-After).
	MaxDelay time.Duration
}

// DefaultRetry is the policy of a Client made without WithRetry: five
// attempts over about three seconds at most, unless Retry-After asks for
// longer.
var DefaultRetry = RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}

// attempts returns MaxAttempts, at least 1.
func (p RetryPolicy) attempts() int { return max(1, p.MaxAttempts) }

// backoff returns the wait before retry attempt+1, before Retry-After.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 0; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// wait sleeps before retrying after err, or returns an error: err when the
// context's deadline comes first, the context's error when it is done.
func (p RetryPolicy) wait(ctx context.Context, attempt int, err error) error {
	d := p.backoff(attempt)
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = e.RetryAfter
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	case <-t.C:
		return nil
	}
}
