package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/dispatcher/dispatcher/dispatch"
)

// pathID returns the path parameter name, unescaped once. chi matches the
// raw path when the request has one (r.URL.RawPath, set when the client
// escaped more than it had to), so an escaped id would otherwise keep its
// escapes; one that does not unescape is returned as it is and fails the id
// check of the Service. Without a raw path chi matches the decoded path,
// whose ids must not be decoded again: /v1/pools/%2570 names the pool "%70"
// (invalid), not "p".
func pathID(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// query returns the query parameter name and whether it is present.
// errInvalidParameter when it is repeated.
func query(r *http.Request, name string) (string, bool, error) {
	if r.URL.RawQuery == "" {
		return "", false, nil
	}
	vs, ok := r.URL.Query()[name]
	switch {
	case !ok:
		return "", false, nil
	case len(vs) > 1:
		return "", false, fmt.Errorf("%w: %s given %d times", errInvalidParameter, name, len(vs))
	}
	return vs[0], true, nil
}

// unknownParameter is the error of a query parameter that an endpoint,
// which takes those of known, does not take.
func unknownParameter(name string, known []string) error {
	if len(known) == 0 {
		return fmt.Errorf("%w: %q: this endpoint takes no query parameters", errInvalidParameter, name)
	}
	return fmt.Errorf("%w: %q: this endpoint takes only %s", errInvalidParameter, name, strings.Join(known, ", "))
}

// queryBool returns the boolean query parameter name, false when absent.
// errInvalidParameter unless it is true or false.
func queryBool(r *http.Request, name string) (bool, error) {
	v, ok, err := query(r, name)
	if err != nil || !ok {
		return false, err
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s=%q, want true or false", errInvalidParameter, name, v)
}

// page returns the limit and cursor query parameters. errInvalidParameter
// for a limit that is not an integer or an empty cursor;
// dispatch.ErrOutOfRange for a limit of 0 or beyond 64 bits, which the
// Service could not tell from an absent or a valid one. The Service checks
// the rest of the range.
func page(r *http.Request) (dispatch.Page, error) {
	var p dispatch.Page
	limit, ok, err := query(r, "limit")
	if err != nil {
		return p, err
	}
	if ok {
		n, err := strconv.ParseInt(limit, 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return p, fmt.Errorf("%w: limit=%q is not an integer", errInvalidParameter, limit)
		}
		if err != nil || n == 0 || n != int64(int(n)) {
			return p, fmt.Errorf("%w: limit %s is outside [1, %d]", dispatch.ErrOutOfRange, limit, dispatch.MaxLimit)
		}
		p.Limit = int(n)
	}
	cursor, ok, err := query(r, "cursor")
	if err != nil {
		return p, err
	}
	if ok && cursor == "" {
		return p, fmt.Errorf("%w: cursor is empty; leave it out for the first page", errInvalidParameter)
	}
	p.Cursor = cursor
	return p, nil
}

// idempotencyKeyHeader is the header of the IETF Idempotency-Key draft.
const idempotencyKeyHeader = "Idempotency-Key"

// idempotencyKey returns the Idempotency-Key header, "" when absent.
// dispatch.ErrInvalidID when it is present but empty, which the Service
// would take for absent; dispatch.ErrInvalidRequest when it is repeated.
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header[idempotencyKeyHeader] // canonical, as net/http keeps it
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", fmt.Errorf("%w: Idempotency-Key given %d times", dispatch.ErrInvalidRequest, len(vs))
	case vs[0] == "":
		return "", fmt.Errorf("%w: Idempotency-Key is empty", dispatch.ErrInvalidID)
	}
	return vs[0], nil
}
