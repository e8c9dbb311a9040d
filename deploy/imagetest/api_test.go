//go:build image

package imagetest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
)

var httpClient = &http.Client{Timeout: 30 * time.Second}

// call sends one request with a bearer token (none when token is "") and
// an Idempotency-Key if one is given, and returns the status, body and headers; a transport error stops the test.
func call(tb testing.TB, method, url, token, body string, key ...string) (int, []byte, http.Header) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if len(key) > 0 {
		req.Header.Set("Idempotency-Key", key[0])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return resp.StatusCode, data, resp.Header
}

// mustCall is call that wants one status and decodes the body into v
// (unless v is nil).
func mustCall(tb testing.TB, method, url, token, body string, want int, v any) {
	tb.Helper()
	status, data, _ := call(tb, method, url, token, body)
	if status != want {
		tb.Fatalf("%s %s: got %d %s, want %d", method, url, status, data, want)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			tb.Fatalf("%s %s: %v: %s", method, url, err, data)
		}
	}
}

// setUpPool creates pool (waterfill) with n Scales through base.
func setUpPool(tb testing.TB, base, pool string, n int) {
	tb.Helper()
	mustCall(tb, http.MethodPut, base+"/v1/pools/"+pool, adminToken, `{"strategy":"waterfill"}`, http.StatusCreated, nil)
	for i := range n {
		mustCall(tb, http.MethodPut, fmt.Sprintf("%s/v1/pools/%s/scales/S%d", base, pool, i), adminToken, `{}`, http.StatusCreated, nil)
	}
}

// TestEveryReplicaServes makes the pool and its Scales through different
// replicas, posts a batch through each, and reads each batch back through
// the next one: the replicas share one state. Waterfill over equal Scales
// spreads 3 × 4 orders evenly, which only holds if every replica saw the
// others' batches.
func TestEveryReplicaServes(t *testing.T) {
	s := shared(t)
	var urls []string
	for _, r := range s.replicas {
		urls = append(urls, s.url(t, r))
	}
	const pool = "every-replica"
	mustCall(t, http.MethodPut, urls[0]+"/v1/pools/"+pool, adminToken, `{"strategy":"waterfill"}`, http.StatusCreated, nil)
	for i := range 4 {
		mustCall(t, http.MethodPut, fmt.Sprintf("%s/v1/pools/%s/scales/S%d", urls[(i+1)%len(urls)], pool, i), adminToken, `{}`, http.StatusCreated, nil)
	}
	var batches []loadtest.BatchAnswer
	for i, u := range urls {
		var body bytes.Buffer
		body.WriteString(`{"orders":[`)
		for j := range 4 {
			if j > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"id":"r%d-o%d"}`, i, j)
		}
		body.WriteString(`]}`)
		var b loadtest.BatchAnswer
		mustCall(t, http.MethodPost, u+"/v1/pools/"+pool+"/batches", userToken, body.String(), http.StatusCreated, &b)
		batches = append(batches, b)
	}
	for i, b := range batches {
		var got loadtest.BatchAnswer
		next := urls[(i+1)%len(urls)]
		mustCall(t, http.MethodGet, next+"/v1/pools/"+pool+"/batches/"+b.BatchID, userToken, "", http.StatusOK, &got)
		if fmt.Sprint(got) != fmt.Sprint(b) {
			t.Errorf("batch %s read through %s: got %v, want %v as answered", b.BatchID, next, got, b)
		}
	}
	var scales struct {
		Scales []struct {
			CompID      string `json:"compId"`
			Outstanding int    `json:"outstanding"`
		} `json:"scales"`
	}
	mustCall(t, http.MethodGet, urls[2]+"/v1/pools/"+pool+"/scales", userToken, "", http.StatusOK, &scales)
	for _, sc := range scales.Scales {
		if sc.Outstanding != 3 {
			t.Errorf("Scale %s: outstanding %d, want 3 (12 orders over 4 Scales, in 3 batches through 3 replicas)", sc.CompID, sc.Outstanding)
		}
	}
	if len(scales.Scales) != 4 {
		t.Errorf("Scales: got %d, want 4", len(scales.Scales))
	}
}
