package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Errors that the api detects itself, before the Service sees the request.
// They are mapped to problems in problemTypes like the errors of dispatch.
var (
	errMalformedJSON    = errors.New("malformed JSON")
	errTrailingData     = errors.New("trailing data")
	errUnknownField     = errors.New("unknown field")
	errWrongType        = errors.New("wrong type")
	errInvalidParameter = errors.New("invalid query parameter")
	errBodyTooLarge     = errors.New("request body too large")
	errUnsupportedMedia = errors.New("unsupported media type")
	errNotFound         = errors.New("not found")
	errMethodNotAllowed = errors.New("method not allowed")
	errTooDeep          = errors.New("JSON nested too deeply")
	errUnauthorized     = errors.New("unauthorized")
	errForbidden        = errors.New("forbidden")
	errRateLimited      = errors.New("rate limited")
)

// problemType is one kind of problem: the error it answers, its status and
// the slug that ends its type URI.
type problemType struct {
	err    error
	status int
	slug   string
	title  string
}

// problemTypes maps every error that has a status of its own, in the one
// place that decides it. Anything else is internalProblem. openapi.yaml
// lists the same slugs.
var problemTypes = []problemType{
	{errMalformedJSON, http.StatusBadRequest, "malformed-json", "Malformed JSON"},
	{errTrailingData, http.StatusBadRequest, "trailing-data", "Trailing data after the JSON value"},
	{errUnknownField, http.StatusBadRequest, "unknown-field", "Unknown field"},
	{errWrongType, http.StatusBadRequest, "wrong-type", "Wrong type"},
	{errInvalidParameter, http.StatusBadRequest, "invalid-parameter", "Invalid query parameter"},
	{dispatch.ErrInvalidID, http.StatusBadRequest, "invalid-id", "Invalid id"},
	{dispatch.ErrInvalidRequest, http.StatusBadRequest, "invalid-request", "Invalid request"},
	{errTooDeep, http.StatusBadRequest, "too-deep", "JSON nested too deeply"},

	{errUnauthorized, http.StatusUnauthorized, "unauthorized", "Unauthorized"},
	{errForbidden, http.StatusForbidden, "forbidden", "Forbidden"},

	{errNotFound, http.StatusNotFound, "not-found", "Not found"},
	{dispatch.ErrPoolNotFound, http.StatusNotFound, "pool-not-found", "Pool not found"},
	{dispatch.ErrScaleNotFound, http.StatusNotFound, "scale-not-found", "Scale not found"},
	{dispatch.ErrOrderNotFound, http.StatusNotFound, "order-not-found", "Order not found"},
	{dispatch.ErrBatchNotFound, http.StatusNotFound, "batch-not-found", "Batch not found"},

	{errMethodNotAllowed, http.StatusMethodNotAllowed, "method-not-allowed", "Method not allowed"},

	{dispatch.ErrOrderExists, http.StatusConflict, "order-exists", "Order already exists"},
	{dispatch.ErrNoEligibleScale, http.StatusConflict, "no-eligible-scale", "No eligible Scale"},
	{dispatch.ErrScaleBusy, http.StatusConflict, "scale-busy", "Scale has outstanding orders"},
	{dispatch.ErrPoolFull, http.StatusConflict, "pool-full", "Pool holds the most Scales it may"},
	{dispatch.ErrOrderState, http.StatusConflict, "order-state", "Order state does not allow this"},
	{dispatch.ErrScaleState, http.StatusConflict, "scale-state", "Scale state does not allow this"},

	{errBodyTooLarge, http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large"},
	{errUnsupportedMedia, http.StatusUnsupportedMediaType, "unsupported-media-type", "Unsupported media type"},

	{dispatch.ErrEmptyBatch, http.StatusUnprocessableEntity, "empty-batch", "Empty batch"},
	{dispatch.ErrBatchTooLarge, http.StatusUnprocessableEntity, "batch-too-large", "Batch too large"},
	{dispatch.ErrDuplicateOrder, http.StatusUnprocessableEntity, "duplicate-order", "Order id repeated in batch"},
	{dispatch.ErrUnknownStrategy, http.StatusUnprocessableEntity, "unknown-strategy", "Unknown strategy"},
	{dispatch.ErrOutOfRange, http.StatusUnprocessableEntity, "out-of-range", "Value out of range"},
	{dispatch.ErrInvalidKey, http.StatusUnprocessableEntity, "invalid-key", "Invalid order key"},
	{dispatch.ErrInvalidState, http.StatusUnprocessableEntity, "invalid-state", "Invalid Scale state"},
	{dispatch.ErrInvalidOnLapse, http.StatusUnprocessableEntity, "invalid-on-lapse", "Invalid onLapse"},
	{dispatch.ErrInvalidReason, http.StatusUnprocessableEntity, "invalid-reason", "Invalid failure reason"},
	{dispatch.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, "idempotency-mismatch", "Idempotency-Key reused with another request"},
	{dispatch.ErrTooExpensive, http.StatusUnprocessableEntity, "too-expensive", "Batch too expensive for the strategy"},

	{errRateLimited, http.StatusTooManyRequests, "rate-limited", "Too many requests"},

	// A client that went away: no one reads the answer, but the access log
	// and the metrics count it as the client's doing, not as a failure of
	// the service (nginx's 499). Before ErrUnavailable, which a store wraps
	// around the context's error.
	clientClosedProblem,

	// Before ErrUnavailable, which it wraps: the store did answer, and a
	// write is applied, but no replica confirmed it in time.
	notReplicatedProblem,
	// Redis at maxmemory: a 503 that says why, before ErrUnavailable, which
	// it wraps.
	storeFullProblem,
	{dispatch.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "Store unavailable"},
	// DISPATCHER_MAX_WATCHERS streams are open on this replica: another
	// replica, or this one later, may take the watch.
	{errTooManyWatchers, http.StatusServiceUnavailable, "too-many-watchers", "Too many watchers"},
	// A store call that ran past the request deadline (Options.RequestTimeout)
	// is a store that did not answer, whether or not the store wrapped the
	// context's error in dispatch.ErrUnavailable.
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "unavailable", "Store unavailable"},
}

// statusClientClosedRequest is the status of a request whose client went
// away before the answer (nginx's 499).
const statusClientClosedRequest = 499

// clientClosedProblem answers a request whose context was cancelled.
var clientClosedProblem = problemType{context.Canceled, statusClientClosedRequest, "client-closed-request", "Client closed the request"}

// storeFullProblem answers dispatch.ErrStoreFull: the store refused the
// change for want of memory, also a dispatch that may have been applied by
// an earlier attempt (a *dispatch.IndeterminateError), which names its
// batch.
var storeFullProblem = problemType{dispatch.ErrStoreFull, http.StatusServiceUnavailable, "store-full", "Store full"}

// outcomeUnknownProblem answers a *dispatch.IndeterminateError: the batch
// may have been applied, and the problem names it.
var outcomeUnknownProblem = problemType{nil, http.StatusServiceUnavailable, "outcome-unknown", "Outcome unknown"}

// notReplicatedProblem answers dispatch.ErrNotReplicated: the store's
// primary answered, but too few replicas confirmed in time what the answer
// rests on, so it is held back. Unlike outcome-unknown the store did
// answer: a write is applied on the primary, and a failover could undo it.
var notReplicatedProblem = problemType{dispatch.ErrNotReplicated, http.StatusServiceUnavailable, "not-replicated", "Not yet on a replica"}

// internalProblem answers every error that problemTypes does not list.
var internalProblem = problemType{nil, http.StatusInternalServerError, "internal", "Internal server error"}

// classify returns the problem type of err.
func classify(err error) problemType {
	if _, ok := errors.AsType[*dispatch.IndeterminateError](err); ok {
		// A client that left while its batch was in the store: nobody
		// reads the answer, and it is the client's doing, as below.
		if errors.Is(err, context.Canceled) {
			return clientClosedProblem
		}
		if errors.Is(err, dispatch.ErrNotReplicated) {
			return notReplicatedProblem
		}
		if errors.Is(err, dispatch.ErrStoreFull) {
			return storeFullProblem
		}
		return outcomeUnknownProblem
	}
	for _, pt := range problemTypes {
		if errors.Is(err, pt.err) {
			return pt
		}
	}
	return internalProblem
}
