package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// cancelFaulty is a faultyStore whose Cancel fails too.
type cancelFaulty struct{ faultyStore }

func (f cancelFaulty) Cancel(context.Context, string, string, time.Time) (dispatch.Order, error) {
	return dispatch.Order{}, f.err
}

// TestNotReplicated: a store whose primary answered but whose replicas did
// not confirm (dispatch.ErrNotReplicated) is 503 not-replicated, not
// outcome-unknown or unavailable, with a detail that says what is where:
// a dispatch names its batch, applied on the primary; another write is
// applied on the primary; a read's state is on the primary only.
func TestNotReplicated(t *testing.T) {
	e := newFaultyEnv(t, fmt.Errorf("%w: 0 of 1 replicas acknowledged within 1s", dispatch.ErrNotReplicated), false)
	e = newEnv(t, withStore(cancelFaulty{e.store.(faultyStore)}))
	for _, c := range []struct {
		method, path, body string
		headers            []string
		batch              bool
		detail             string
	}{
		{"POST", "/v1/pools/p/batches", ordersJSON("o-1"), []string{"Idempotency-Key", "k-1"}, true, "primary answered the batch (applied it, or refused it), but no replica has confirmed that yet"},
		{"POST", "/v1/pools/p/orders/o-1/cancel", "", nil, false, "write is applied on the store's primary but not yet on a replica"},
		{"GET", "/v1/pools/p", "", nil, false, "would show is on the store's primary but not yet on a replica"},
	} {
		resp := e.must(t, http.StatusServiceUnavailable, nil, c.method, c.path, c.body, c.headers...)
		p := resp.problem(t)
		if p.Type != problemPrefix+"not-replicated" || p.Title != "Not yet on a replica" || (p.BatchID != "") != c.batch {
			t.Errorf("%s %s: got %s, want not-replicated (batchId: %v)", c.method, c.path, resp.body, c.batch)
		}
		if !strings.Contains(p.Detail, c.detail) || strings.Contains(p.Detail, "did not answer") {
			t.Errorf("%s %s: detail %q, want one with %q", c.method, c.path, p.Detail, c.detail)
		}
		if resp.header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: Retry-After %q, want 1", c.method, c.path, resp.header.Get("Retry-After"))
		}
	}
}
