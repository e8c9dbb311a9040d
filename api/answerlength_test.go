package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestAnswerLength: a batch's answer, to its dispatch, a GET and a HEAD,
// carries a Content-Length of its body's length and is not chunked, on both
// sides of the size below which writeBatch leaves that header to net/http
// (1 KiB) and of net/http's 2 KiB buffer, up to answers written in one
// write (3 KiB and more).
func TestAnswerLength(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p/scales/s-1", "")
	sizes := map[string]bool{} // the answers' sizes, by KiB: the test must cross each
	for n := 1; n <= testMaxBatch; n += 3 {
		for _, idLen := range []int{4, 40, 100} {
			ids := make([]string, n)
			for i := range ids {
				p := fmt.Sprintf("%d-%d-%d-", idLen, n, i)
				ids[i] = p + strings.Repeat("x", max(0, idLen-len(p)))
			}
			r := e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p/batches", ordersJSON(ids...))
			checkLength(t, "POST", r, len(r.body))
			loc := r.header.Get("Location")
			g := e.must(t, http.StatusOK, nil, "GET", loc, "")
			checkLength(t, "GET", g, len(g.body))
			// (the spec's client knows no HEAD: TestHead's way)
			h, err := http.DefaultClient.Head(e.url + loc)
			if err != nil {
				t.Fatal(err)
			}
			_ = h.Body.Close()
			checkLength(t, "HEAD", response{status: h.StatusCode, header: h.Header}, len(g.body))
			sizes[strconv.Itoa(len(r.body)>>10)] = true
		}
	}
	for _, kib := range []string{"0", "1", "2", "3"} {
		if !sizes[kib] {
			t.Errorf("no answer of %s KiB: %v", kib, sizes)
		}
	}
}

func checkLength(t *testing.T, method string, r response, n int) {
	t.Helper()
	if got := r.header.Get("Content-Length"); got != strconv.Itoa(n) {
		t.Errorf("%s: Content-Length %q, want %d (%d bytes)", method, got, n, len(r.body))
	}
}
