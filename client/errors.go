package client

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ProblemType is the stable slug that ends a problem's type URI
// (urn:dispatcher:problem:<slug>); openapi.yaml lists them all.
type ProblemType string

// problemPrefix starts the type URI of every problem of the service.
const problemPrefix = "urn:dispatcher:problem:"

// The problem types of the service, by status.
const (
	ProblemMalformedJSON       ProblemType = "malformed-json"         // 400
	ProblemTrailingData        ProblemType = "trailing-data"          // 400
	ProblemUnknownField        ProblemType = "unknown-field"          // 400
	ProblemWrongType           ProblemType = "wrong-type"             // 400
	ProblemInvalidParameter    ProblemType = "invalid-parameter"      // 400
	ProblemInvalidID           ProblemType = "invalid-id"             // 400
	ProblemInvalidRequest      ProblemType = "invalid-request"        // 400
	ProblemTooDeep             ProblemType = "too-deep"               // 400
	ProblemUnauthorized        ProblemType = "unauthorized"           // 401
	ProblemForbidden           ProblemType = "forbidden"              // 403
	ProblemNotFound            ProblemType = "not-found"              // 404
	ProblemPoolNotFound        ProblemType = "pool-not-found"         // 404
	ProblemScaleNotFound       ProblemType = "scale-not-found"        // 404
	ProblemOrderNotFound       ProblemType = "order-not-found"        // 404
	ProblemBatchNotFound       ProblemType = "batch-not-found"        // 404
	ProblemMethodNotAllowed    ProblemType = "method-not-allowed"     // 405
	ProblemOrderExists         ProblemType = "order-exists"           // 409
	ProblemNoEligibleScale     ProblemType = "no-eligible-scale"      // 409
	ProblemScaleBusy           ProblemType = "scale-busy"             // 409
	ProblemOrderState          ProblemType = "order-state"            // 409
	ProblemScaleState          ProblemType = "scale-state"            // 409
	ProblemPoolFull            ProblemType = "pool-full"              // 409
	ProblemBodyTooLarge        ProblemType = "body-too-large"         // 413
	ProblemUnsupportedMedia    ProblemType = "unsupported-media-type" // 415
	ProblemEmptyBatch          ProblemType = "empty-batch"            // 422
	ProblemBatchTooLarge       ProblemType = "batch-too-large"        // 422
	ProblemDuplicateOrder      ProblemType = "duplicate-order"        // 422
	ProblemUnknownStrategy     ProblemType = "unknown-strategy"       // 422
	ProblemOutOfRange          ProblemType = "out-of-range"           // 422
	ProblemInvalidKey          ProblemType = "invalid-key"            // 422
	ProblemInvalidState        ProblemType = "invalid-state"          // 422
	ProblemInvalidOnLapse      ProblemType = "invalid-on-lapse"       // 422
	ProblemInvalidReason       ProblemType = "invalid-reason"         // 422
	ProblemIdempotencyMismatch ProblemType = "idempotency-mismatch"   // 422
	ProblemTooExpensive        ProblemType = "too-expensive"          // 422
	ProblemRateLimited         ProblemType = "rate-limited"           // 429
	ProblemClientClosedRequest ProblemType = "client-closed-request"  // 499
	ProblemInternal            ProblemType = "internal"               // 500
	ProblemUnavailable         ProblemType = "unavailable"            // 503
	ProblemOutcomeUnknown      ProblemType = "outcome-unknown"        // 503
	ProblemNotReplicated       ProblemType = "not-replicated"         // 503
	ProblemTooManyWatchers     ProblemType = "too-many-watchers"      // 503
	// ProblemStoreFull: Redis is out of memory and refused the change; a
	// dispatch's problem names its batchId, which an earlier attempt may
	// have applied.
	ProblemStoreFull ProblemType = "store-full" // 503
)

// Sentinel errors, one per problem type that a caller may want to tell
// apart: errors.Is(err, client.ErrPoolNotFound) holds for every *Error of
// that type, whatever its detail.
var (
	ErrInvalidID           = &Error{Type: ProblemInvalidID}
	ErrInvalidRequest      = &Error{Type: ProblemInvalidRequest}
	ErrUnauthorized        = &Error{Type: ProblemUnauthorized}
	ErrForbidden           = &Error{Type: ProblemForbidden}
	ErrPoolNotFound        = &Error{Type: ProblemPoolNotFound}
	ErrScaleNotFound       = &Error{Type: ProblemScaleNotFound}
	ErrOrderNotFound       = &Error{Type: ProblemOrderNotFound}
	ErrBatchNotFound       = &Error{Type: ProblemBatchNotFound}
	ErrOrderExists         = &Error{Type: ProblemOrderExists}
	ErrNoEligibleScale     = &Error{Type: ProblemNoEligibleScale}
	ErrScaleBusy           = &Error{Type: ProblemScaleBusy}
	ErrOrderState          = &Error{Type: ProblemOrderState}
	ErrScaleState          = &Error{Type: ProblemScaleState}
	ErrPoolFull            = &Error{Type: ProblemPoolFull}
	ErrEmptyBatch          = &Error{Type: ProblemEmptyBatch}
	ErrBatchTooLarge       = &Error{Type: ProblemBatchTooLarge}
	ErrDuplicateOrder      = &Error{Type: ProblemDuplicateOrder}
	ErrUnknownStrategy     = &Error{Type: ProblemUnknownStrategy}
	ErrOutOfRange          = &Error{Type: ProblemOutOfRange}
	ErrIdempotencyMismatch = &Error{Type: ProblemIdempotencyMismatch}
	ErrTooExpensive        = &Error{Type: ProblemTooExpensive}
	ErrRateLimited         = &Error{Type: ProblemRateLimited}
	ErrUnavailable         = &Error{Type: ProblemUnavailable}
	ErrOutcomeUnknown      = &Error{Type: ProblemOutcomeUnknown}
	ErrNotReplicated       = &Error{Type: ProblemNotReplicated}
	ErrTooManyWatchers     = &Error{Type: ProblemTooManyWatchers}
	ErrStoreFull           = &Error{Type: ProblemStoreFull}
)

// Error is an error the service answered: the RFC 9457 problem of its body
// (openapi.yaml's Problem), or, for an answer without one (a proxy's 502,
// the HTTP server's 431), the status with its text as Title and no Type.
type Error struct {
	// Type is the problem's slug ("pool-not-found"), empty when the answer
	// was not a problem of the service.
	Type ProblemType
	// Title summarises the type; Detail says what went wrong this time.
	Title, Detail string
	// Status is the HTTP status of the answer.
	Status int
	// BatchID names, for outcome-unknown, the batch that may have been
	// applied: get it with GetBatch, or retry with the same key; for
	// not-replicated, the batch applied on the store's primary but not yet
	// on a replica.
	BatchID string
	// RequestID is the answer's X-Request-Id, under which the service
	// logged the request.
	RequestID string
	// RetryAfter is the answer's Retry-After, zero when it had none.
	RetryAfter time.Duration
}

// Error returns the status, title and detail.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dispatcher: %d %s", e.Status, e.Title)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.BatchID != "" {
		b.WriteString(" (batch " + e.BatchID + ")")
	}
	return b.String()
}

// Is reports whether target is an *Error of the same Type, or, for a
// target without a Type, of the same Status.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t.Type != "" {
		return t.Type == e.Type
	}
	return t.Status != 0 && t.Status == e.Status
}

// Problem is the body of an error answer (openapi.yaml's Problem).
type Problem struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Status  int    `json:"status"`
	Detail  string `json:"detail"`
	BatchID string `json:"batchId,omitempty"`
}

// newError builds the *Error of a non-2xx answer from its status, headers
// and body.
func newError(status int, h http.Header, body []byte, p *Problem) *Error {
	e := &Error{Status: status, RequestID: h.Get("X-Request-Id"), RetryAfter: retryAfter(h)}
	if p != nil && strings.HasPrefix(p.Type, problemPrefix) {
		e.Type = ProblemType(strings.TrimPrefix(p.Type, problemPrefix))
		e.Title, e.Detail, e.BatchID = p.Title, p.Detail, p.BatchID
		return e
	}
	e.Title = http.StatusText(status)
	if e.Title == "" {
		e.Title = "status " + fmt.Sprint(status)
	}
	if s := strings.TrimSpace(string(body)); s != "" && len(s) <= 200 {
		e.Detail = s
	}
	return e
}
