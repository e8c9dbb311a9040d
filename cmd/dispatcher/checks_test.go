package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
)

// The HTTP helpers of the fault tests: the check after each fault, and the
// requests that set a pool up and probe a replica.

// verify checks, through the replica at base, that every acknowledged batch
// is recorded as answered and exactly once: GET returns it; each of its
// orders is assigned, to the answered Scale, under the answered batch id; no
// two acknowledgements share a batch id; and every Scale's outstanding is
// the number of acknowledged orders assigned to it (so no order was
// recorded that was not acknowledged), its orderCount its baseLoad plus
// outstanding. It fails t if any batch was not acknowledged.
func verify(t *testing.T, base string, l *loadtest.Load) {
	t.Helper()
	if len(l.Unacked) > 0 {
		t.Errorf("%d batches never acknowledged (e.g. %s); failures %s", len(l.Unacked), l.Unacked[0].Key, l.FailureSummary())
	}
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	pool := base + "/v1/pools/" + l.Spec.Pool
	ids := map[string]string{}
	perScale := map[string]int64{}
	lost := 0
	for _, a := range l.Acks {
		if other, dup := ids[a.BatchID]; dup {
			t.Errorf("batch id %s acknowledged for keys %s and %s", a.BatchID, other, a.Key)
		}
		ids[a.BatchID] = a.Key
		var b loadtest.BatchAnswer
		if status := getJSON(t, c, pool+"/batches/"+a.BatchID, &b); status != http.StatusOK {
			t.Errorf("GET batch %s (key %s, acknowledged by %s): %d, want 200", a.BatchID, a.Key, a.Target, status)
			lost++
			continue
		}
		for _, as := range b.Assignments {
			if a.Assigned[as.OrderID] != as.CompID {
				t.Errorf("batch %s: order %s on %s, answered %s", a.BatchID, as.OrderID, as.CompID, a.Assigned[as.OrderID])
			}
		}
		for _, id := range a.Orders {
			var o struct{ CompID, BatchID, State string }
			if status := getJSON(t, c, pool+"/orders/"+id, &o); status != http.StatusOK {
				t.Errorf("GET order %s of batch %s: %d, want 200", id, a.BatchID, status)
				continue
			}
			if o.BatchID != a.BatchID || o.CompID != a.Assigned[id] || o.State != "assigned" {
				t.Errorf("order %s: batch %s on %s %s; want batch %s on %s assigned", id, o.BatchID, o.CompID, o.State, a.BatchID, a.Assigned[id])
			}
			perScale[a.Assigned[id]]++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged batches lost", lost, len(l.Acks))
	}
	var scales struct {
		Scales []struct {
			CompID                            string
			OrderCount, Outstanding, BaseLoad int64
		}
	}
	if status := getJSON(t, c, pool+"/scales?limit=10000", &scales); status != http.StatusOK {
		t.Fatalf("list scales: %d", status)
	}
	var sum, want int64
	for _, sc := range scales.Scales {
		if sc.Outstanding != perScale[sc.CompID] {
			t.Errorf("scale %s: outstanding %d, want the %d acknowledged orders assigned to it", sc.CompID, sc.Outstanding, perScale[sc.CompID])
		}
		if sc.OrderCount != sc.BaseLoad+sc.Outstanding {
			t.Errorf("scale %s: orderCount %d, want baseLoad %d + outstanding %d", sc.CompID, sc.OrderCount, sc.BaseLoad, sc.Outstanding)
		}
		sum += sc.Outstanding
	}
	for _, n := range perScale {
		want += n
	}
	if sum != want {
		t.Errorf("Σ outstanding %d, want %d acknowledged orders", sum, want)
	}
}

// getJSON GETs url into v and returns the status.
func getJSON(t *testing.T, c *http.Client, url string, v any) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, data)
		}
	}
	return resp.StatusCode
}

// do sends one JSON request and fails t unless it is answered want.
func do(t *testing.T, method, url, body string, want int) {
	t.Helper()
	if status, data := call(t, method, url, body); status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, status, data, want)
	}
}

// call sends one JSON request and returns the status and the body.
func call(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// postBatch posts body to pool's batches at base with the Idempotency-Key
// key, and returns the status, the headers and the decoded answer.
func postBatch(t *testing.T, base, pool, key, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/pools/"+pool+"/batches", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("POST %s: %d %q: %v", req.URL, resp.StatusCode, data, err)
	}
	return resp.StatusCode, resp.Header, m
}

// setUpPool creates pool with n Scales of differing base loads through the
// replica at base.
func setUpPool(t *testing.T, base, pool string, n int) {
	t.Helper()
	do(t, http.MethodPut, base+"/v1/pools/"+pool, `{}`, http.StatusCreated)
	for i := range n {
		do(t, http.MethodPut, fmt.Sprintf("%s/v1/pools/%s/scales/S%d", base, pool, i), fmt.Sprintf(`{"orderCount":%d}`, 3*i), http.StatusCreated)
	}
}

// readyWithin polls GET base/readyz until it answers 200, at most d, and
// returns how long that took. It returns an error rather than failing a
// test, so that any goroutine may call it.
func readyWithin(base string, d time.Duration) (time.Duration, error) {
	c := &http.Client{Timeout: time.Second}
	defer c.CloseIdleConnections()
	start := time.Now()
	for {
		resp, err := c.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Since(start) > d {
			return 0, fmt.Errorf("%s/readyz not 200 within %s: %v", base, d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
