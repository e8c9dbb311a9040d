package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

// problemTypePrefix begins the type URI of every problem; the slug of
// problemTypes ends it.
const problemTypePrefix = "urn:dispatcher:problem:"

// problem is an RFC 9457 problem detail, with the batchId of a dispatch whose
// outcome is unknown.
type problem struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Status  int    `json:"status"`
	Detail  string `json:"detail"`
	BatchID string `json:"batchId,omitempty"`
}

// Details shown instead of the error for the statuses whose error may carry
// internals (addresses, driver messages); the error itself is logged.
const (
	detailInternal       = "internal server error; the request id identifies it in the server log"
	detailUnavailable    = "the store is unavailable; retry later"
	detailOutcomeUnknown = "the batch may have been applied: the store did not answer; "
	// not-replicated, for a batch, another write, and a read
	detailNotReplicatedBatch = "the store's primary answered the batch (applied it, or refused it), but no replica has confirmed that yet, so a failover now could undo it; "
	detailNotReplicatedWrite = "the write is applied on the store's primary but not yet on a replica, so a failover now could undo it; retry it: a retry applies it once and answers once a replica has it"
	detailNotReplicatedRead  = "what this answer would show is on the store's primary but not yet on a replica, so a failover now could undo it; retry later"
	// what to do then, with and without an Idempotency-Key
	detailRetryKeyed   = "get it by its batchId, or retry with the same Idempotency-Key"
	detailRetryUnkeyed = "get it by its batchId before sending its orders again; batches sent with an Idempotency-Key can be retried as they are"
	detailStoreFull    = "the store is out of memory (Redis reached its maxmemory) and refused the change; it keeps everything it acknowledged. Retry once an operator has given it room"
	// a dispatch refused so may still have been applied by an attempt
	// before the refusal
	detailStoreFullBatch = "; an earlier attempt of this batch may have been applied: "
)

// writeError answers err as a problem. Errors of 5xx statuses are logged
// with their detail and shown to the caller in plain words.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	pt := classify(err)
	p := problem{Type: problemTypePrefix + pt.slug, Title: pt.title, Status: pt.status, Detail: err.Error()}
	switch pt {
	case internalProblem:
		p.Detail = detailInternal
		s.logError(r, slog.LevelError, err)
	case outcomeUnknownProblem:
		ind, _ := errors.AsType[*dispatch.IndeterminateError](err)
		p.Detail, p.BatchID = retryAdvice(r, detailOutcomeUnknown), ind.BatchID
		s.logError(r, slog.LevelWarn, err)
	case notReplicatedProblem:
		p.Detail = detailNotReplicatedWrite
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			p.Detail = detailNotReplicatedRead
		}
		if ind, ok := errors.AsType[*dispatch.IndeterminateError](err); ok {
			p.Detail, p.BatchID = retryAdvice(r, detailNotReplicatedBatch), ind.BatchID
		}
		s.logError(r, slog.LevelWarn, err)
	case storeFullProblem:
		p.Detail = detailStoreFull
		if ind, ok := errors.AsType[*dispatch.IndeterminateError](err); ok {
			p.Detail, p.BatchID = retryAdvice(r, detailStoreFull+detailStoreFullBatch), ind.BatchID
		}
		s.logError(r, slog.LevelWarn, err)
	case clientClosedProblem:
		if ind, ok := errors.AsType[*dispatch.IndeterminateError](err); ok {
			// the client left while the batch was in the store: the log
			// keeps its id, as it may have been applied
			p.BatchID = ind.BatchID
			s.logError(r, slog.LevelInfo, err)
		}
	default:
		if pt.status == http.StatusServiceUnavailable {
			p.Detail = detailUnavailable
			s.logError(r, slog.LevelWarn, err)
		}
	}
	if pt.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if rl, ok := errors.AsType[*rateLimitedError](err); ok {
		w.Header().Set("Retry-After", rl.retryAfterSeconds())
	}
	writeBody(w, pt.status, "application/problem+json", p)
}

func (s *server) logError(r *http.Request, level slog.Level, err error) {
	s.log.LogAttrs(r.Context(), level, "request failed",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("request_id", requestIDOf(r)),
		slog.String("error", err.Error()))
}

// retryAdvice ends detail, the problem of a batch that may have been
// applied, with what its client should do: retry with its Idempotency-Key
// if the request had one, else look the batch up before sending its
// orders again.
func retryAdvice(r *http.Request, detail string) string {
	if r.Header.Get(idempotencyKeyHeader) != "" {
		return detail + detailRetryKeyed
	}
	return detail + detailRetryUnkeyed
}
