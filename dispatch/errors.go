package dispatch

import (
	"errors"
	"fmt"
)

// Errors of invalid input that the caller must correct (HTTP 400).
var (
	// ErrInvalidID is an id (pool, compId, order, batch, idempotency key) that
	// does not match IDPattern.
	ErrInvalidID = errors.New("invalid id")
	// ErrInvalidRequest is a request that cannot be combined as given, such as
	// dryRun with an Idempotency-Key.
	ErrInvalidRequest = errors.New("invalid request")
)

// Errors of well-formed input that the service cannot process (HTTP 422).
var (
	// ErrEmptyBatch is a batch without orders.
	ErrEmptyBatch = errors.New("empty batch")
	// ErrBatchTooLarge is a batch over the configured maximum.
	ErrBatchTooLarge = errors.New("batch too large")
	// ErrDuplicateOrder is an order id that appears twice in one batch.
	ErrDuplicateOrder = errors.New("duplicate order id in batch")
	// ErrUnknownStrategy is a strategy name the service does not know.
	ErrUnknownStrategy = errors.New("unknown strategy")
	// ErrOutOfRange is a number outside its documented range.
	ErrOutOfRange = errors.New("value out of range")
	// ErrInvalidKey is an order key that is not 1 to 256 bytes of UTF-8.
	ErrInvalidKey = errors.New("invalid order key")
	// ErrInvalidReason is a failure reason that is not at most
	// MaxReasonBytes of UTF-8.
	ErrInvalidReason = errors.New("invalid failure reason")
	// ErrInvalidOnLapse is an onLapse other than hold or reassign.
	ErrInvalidOnLapse = errors.New("invalid onLapse")
	// ErrInvalidState is a Scale state other than active, draining or down.
	ErrInvalidState = errors.New("invalid scale state")
	// ErrIdempotencyMismatch is an Idempotency-Key reused with another request.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with another request")
	// ErrTooExpensive is a batch whose strategy would cost more than the
	// per-call cap (eligible Scales × orders).
	ErrTooExpensive = errors.New("batch too expensive for strategy")
)

// Errors of things that do not exist (HTTP 404).
var (
	// ErrPoolNotFound is an unknown pool.
	ErrPoolNotFound = errors.New("pool not found")
	// ErrScaleNotFound is an unknown Scale.
	ErrScaleNotFound = errors.New("scale not found")
	// ErrOrderNotFound is an unknown order.
	ErrOrderNotFound = errors.New("order not found")
	// ErrBatchNotFound is an unknown batch.
	ErrBatchNotFound = errors.New("batch not found")
)

// Errors of a conflict with the current state (HTTP 409).
var (
	// ErrOrderExists is an order id that the pool already holds.
	ErrOrderExists = errors.New("order already exists")
	// ErrNoEligibleScale means no active Scale below its maxOrders can take
	// the batch.
	ErrNoEligibleScale = errors.New("no eligible scale")
	// ErrPoolFull is a new Scale for a pool that holds the most Scales a
	// pool may (MaxScales).
	ErrPoolFull = errors.New("pool holds the most Scales it may")
	// ErrScaleBusy is a Scale that still has outstanding orders.
	ErrScaleBusy = errors.New("scale has outstanding orders")
	// ErrOrderState is a transition the order's state does not allow, such as
	// completing a cancelled order.
	ErrOrderState = errors.New("order state does not allow this")
	// ErrScaleState is an operation the Scale's state does not allow, such
	// as reassigning the orders of a Scale that is not down.
	ErrScaleState = errors.New("scale state does not allow this")
)

// ErrUnavailable means the store is unreachable or did not answer (HTTP 503).
var ErrUnavailable = errors.New("store unavailable")

// ErrNotSent is an ErrUnavailable of a store that proves it sent nothing
// (its client held the call back while the store was not answering):
// nothing was applied, so a dispatch that fails with it is not
// indeterminate, and a retry is safe.
var ErrNotSent = fmt.Errorf("%w: not sent", ErrUnavailable)

// ErrNotReplicated is an ErrUnavailable of a store whose primary answered
// but whose replicas did not confirm in time what the answer rests on (a
// Redis store with WAIT on): a write is applied on the primary, or a read
// saw such a write, and a failover now could undo it. The answer is held
// back. A dispatch that fails with it is an *IndeterminateError that
// wraps it, naming the batch.
var ErrNotReplicated = fmt.Errorf("%w: not yet confirmed by a replica", ErrUnavailable)

// ErrStoreFull is an ErrUnavailable of a store that is out of memory (Redis
// at maxmemory with noeviction): it refused the change, and keeps
// everything it held. It lasts until the store gets room (a larger
// maxmemory, or records that leave), so a retry soon after fails alike.
var ErrStoreFull = fmt.Errorf("%w: out of memory", ErrUnavailable)

// IndeterminateError is a dispatch whose outcome is unknown: the store may
// have applied the batch but did not answer, or applied it but did not
// confirm that enough replicas hold it (then Err wraps ErrNotReplicated).
// BatchID names the batch so the
// caller can look it up or retry with its Idempotency-Key. It unwraps to
// ErrUnavailable.
type IndeterminateError struct {
	BatchID string
	Err     error
}

// Error describes the failure and names the batch.
func (e *IndeterminateError) Error() string {
	return fmt.Sprintf("batch %s may have been applied: %v", e.BatchID, e.Err)
}

// Unwrap returns ErrUnavailable and the cause, so errors.Is finds both.
func (e *IndeterminateError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// errorf wraps a sentinel with a detail for the caller.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}
