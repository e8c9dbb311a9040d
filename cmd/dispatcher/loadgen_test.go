package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The clients of the fault tests: workers that send batches of orders with
// ids and an Idempotency-Key each, and retry every batch that gets no 201
// with the same key and body, on the next replica, until it does.

// loadSpec describes a load.
type loadSpec struct {
	pool      string
	prefix    string // makes this load's order ids and keys unique
	workers   int
	batches   int // per worker
	maxOrders int // each batch has 1 to maxOrders orders
	// targets returns the replicas' base URLs; attempt n of a batch goes
	// to targets()[(first+n) % len], first spreading the workers.
	targets func() []string
	// giveUp ends the retries of a batch that has no 201 yet.
	giveUp time.Duration
	// primary sends every first attempt to targets()[0], and only the
	// retries elsewhere.
	primary bool
}

// ack is a batch answered 201.
type ack struct {
	key, batchID, target string
	orders               []string          // in request order
	assigned             map[string]string // orderId → compId, as answered
	replayed             bool              // Idempotent-Replayed: true
	attempts             int
	at                   time.Time // when the 201 arrived
}

// pending is a batch that never got its 201.
type pending struct {
	key    string
	orders []string
}

// load runs a loadSpec. Its counters may be read while it runs.
type load struct {
	spec   loadSpec
	client *http.Client
	acked  atomic.Int64
	start  time.Time
	wg     sync.WaitGroup

	mu       sync.Mutex
	acks     []ack
	unacked  []pending
	failures map[string]int // failed attempts by kind
	unknown  []string       // batchIds of 503 outcome-unknown answers
	bad      []string       // answers no retry can mend (4xx, 500)
}

func startLoad(t *testing.T, spec loadSpec) *load {
	t.Helper()
	l := &load{
		spec: spec,
		client: &http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: spec.workers, DisableCompression: true},
		},
		failures: map[string]int{},
		start:    time.Now(),
	}
	t.Cleanup(l.client.CloseIdleConnections)
	for w := range spec.workers {
		l.wg.Go(func() { l.worker(w) })
	}
	return l
}

// wait waits for every worker and fails t on answers that a retry cannot
// mend.
func (l *load) wait(t *testing.T) {
	t.Helper()
	l.wg.Wait()
	if len(l.bad) > 0 {
		t.Errorf("%d answers no retry mends, e.g. %s", len(l.bad), l.bad[0])
	}
}

// waitAcked waits until n batches are acknowledged, at most d.
func (l *load) waitAcked(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for l.acked.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d batches acknowledged in %s; failures %v", l.acked.Load(), n, d, l.failureSummary())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *load) worker(w int) {
	s := l.spec
	for b := range s.batches {
		n := 1 + (w*7+b*3)%s.maxOrders
		p := pending{key: fmt.Sprintf("%s.w%d.b%d", s.prefix, w, b)}
		var body bytes.Buffer
		body.WriteString(`{"orders":[`)
		for j := range n {
			id := fmt.Sprintf("%s.w%d.b%d.o%d", s.prefix, w, b, j)
			p.orders = append(p.orders, id)
			if j > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"id":%q,"key":"cust-%d"}`, id, (w+j)%5)
		}
		body.WriteString(`]}`)
		first := w + b
		if s.primary {
			first = 0
		}
		if a, ok := l.send(first, p, body.Bytes()); ok {
			l.mu.Lock()
			l.acks = append(l.acks, a)
			l.mu.Unlock()
			l.acked.Add(1)
		} else {
			l.mu.Lock()
			l.unacked = append(l.unacked, p)
			l.mu.Unlock()
		}
	}
}

// send posts one batch until it is answered 201, trying the replicas in
// turn, and gives up after spec.giveUp.
func (l *load) send(first int, p pending, body []byte) (ack, bool) {
	giveUp := time.Now().Add(l.spec.giveUp)
	pause := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		targets := l.spec.targets()
		target := targets[(first+attempt)%len(targets)]
		a, kind, err := l.post(target, p, body)
		if err == nil {
			a.attempts = attempt + 1
			return a, true
		}
		l.mu.Lock()
		l.failures[kind]++
		if kind == "bad" {
			l.bad = append(l.bad, err.Error())
		}
		l.mu.Unlock()
		if kind == "bad" || time.Now().After(giveUp) {
			return ack{}, false
		}
		if kind != "refused" { // a refused connection costs nothing: try the next at once
			time.Sleep(pause)
			pause = min(2*pause, 200*time.Millisecond)
		}
	}
}

// post sends one attempt. kind names a failure: refused, reset, timeout,
// unavailable, outcome-unknown, or bad (an answer no retry can mend).
func (l *load) post(target string, p pending, body []byte) (ack, string, error) {
	url := target + "/v1/pools/" + l.spec.pool + "/batches"
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ack{}, "bad", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", p.key)
	resp, err := l.client.Do(req)
	if err != nil {
		var ne net.Error
		switch {
		case isRefused(err):
			return ack{}, "refused", err
		case errors.As(err, &ne) && ne.Timeout():
			return ack{}, "timeout", err
		}
		return ack{}, "reset", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return ack{}, "reset", err
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		var b batchAnswer
		if err := json.Unmarshal(data, &b); err != nil || b.BatchID == "" || len(b.Assignments) != len(p.orders) {
			return ack{}, "bad", fmt.Errorf("201 for %s: %v: %s", p.key, err, data)
		}
		a := ack{key: p.key, batchID: b.BatchID, target: target, orders: p.orders, assigned: map[string]string{},
			replayed: resp.Header.Get("Idempotent-Replayed") == "true", at: time.Now()}
		for i, as := range b.Assignments {
			if as.OrderID != p.orders[i] {
				return ack{}, "bad", fmt.Errorf("201 for %s: assignment %d is %s, want %s", p.key, i, as.OrderID, p.orders[i])
			}
			a.assigned[as.OrderID] = as.CompID
		}
		return a, "", nil
	case http.StatusServiceUnavailable:
		var pr struct{ Type, BatchID string }
		_ = json.Unmarshal(data, &pr)
		if strings.HasSuffix(pr.Type, ":outcome-unknown") {
			if pr.BatchID == "" {
				return ack{}, "bad", fmt.Errorf("503 outcome-unknown without a batchId: %s", data)
			}
			l.mu.Lock()
			l.unknown = append(l.unknown, pr.BatchID)
			l.mu.Unlock()
			return ack{}, "outcome-unknown", errors.New(string(data))
		}
		return ack{}, "unavailable", errors.New(string(data))
	}
	return ack{}, "bad", fmt.Errorf("POST %s key %s: %d %s", url, p.key, resp.StatusCode, data)
}

// failureSummary lists the failed attempts by kind, in a stable order.
func (l *load) failureSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var kinds []string
	for k, n := range l.failures {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, " ")
}

// replays counts the acknowledgements that were replays of a batch an
// earlier attempt had applied.
func (l *load) replays() int {
	n := 0
	for _, a := range l.acks {
		if a.replayed {
			n++
		}
	}
	return n
}

// batchAnswer is the body of a 201 or of GET …/batches/{id}.
type batchAnswer struct {
	BatchID     string `json:"batchId"`
	Assignments []struct {
		OrderID string `json:"orderId"`
		CompID  string `json:"compId"`
	} `json:"assignments"`
}
