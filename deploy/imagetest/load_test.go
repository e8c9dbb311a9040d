//go:build image

package imagetest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The clients of the fault tests: workers that send batches of orders with
// ids and an Idempotency-Key each until told to stop, and retry a batch
// that gets no 201 with the same key and body on the next replica.

type loadSpec struct {
	pool, prefix string
	workers      int
	orders       int // per batch
	// targets are the replicas' base URLs; attempt n of a batch goes to
	// targets[(first+n) % len]. With primary, every first attempt goes to
	// targets[0]; else the workers spread their first attempts.
	// load.retarget changes them, as a load balancer drops a replica it
	// found dead.
	targets []string
	primary bool
}

// ack is a batch answered 201.
type ack struct {
	key, batchID, target string
	orders               []string
	assigned             map[string]string // orderId → compId, as answered
	replayed             bool              // Idempotent-Replayed: true
	at                   time.Time         // when the 201 arrived
}

type load struct {
	spec    loadSpec
	client  *http.Client
	stop    chan struct{}
	wg      sync.WaitGroup
	acked   atomic.Int64
	targets atomic.Pointer[[]string]

	mu       sync.Mutex
	acks     []ack
	failures map[string]int // failed attempts by kind
	bad      []string       // answers a retry cannot mend
}

func startLoad(spec loadSpec) *load {
	l := &load{
		spec:     spec,
		client:   &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: spec.workers}},
		stop:     make(chan struct{}),
		failures: map[string]int{},
	}
	l.targets.Store(&spec.targets)
	for w := range spec.workers {
		l.wg.Go(func() { l.worker(w) })
	}
	return l
}

// retarget sends the next attempts to targets.
func (l *load) retarget(targets ...string) { l.targets.Store(&targets) }

// waitAcked waits until n more batches than now are acknowledged.
func (l *load) waitAcked(tb testing.TB, n int64, d time.Duration) {
	tb.Helper()
	want := l.acked.Load() + n
	deadline := time.Now().Add(d)
	for l.acked.Load() < want {
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d batches acknowledged in %s; failed attempts: %s", l.acked.Load(), want, d, l.failureSummary())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish stops the workers once their current batch is acknowledged, and
// fails tb on answers no retry mends.
func (l *load) finish(tb testing.TB) {
	tb.Helper()
	close(l.stop)
	l.wg.Wait()
	l.client.CloseIdleConnections()
	if len(l.bad) > 0 {
		tb.Errorf("%d answers no retry mends, e.g. %s", len(l.bad), l.bad[0])
	}
}

func (l *load) worker(w int) {
	for b := 0; ; b++ {
		select {
		case <-l.stop:
			return
		default:
		}
		key := fmt.Sprintf("%s.w%d.b%d", l.spec.prefix, w, b)
		var orders []string
		var body bytes.Buffer
		body.WriteString(`{"orders":[`)
		for j := range l.spec.orders {
			id := fmt.Sprintf("%s.o%d", key, j)
			orders = append(orders, id)
			if j > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"id":%q}`, id)
		}
		body.WriteString(`]}`)
		first := w + b
		if l.spec.primary {
			first = 0
		}
		a, ok := l.send(first, key, orders, body.Bytes())
		if !ok {
			return
		}
		l.mu.Lock()
		l.acks = append(l.acks, a)
		l.mu.Unlock()
		l.acked.Add(1)
	}
}

// send posts one batch until it is answered 201, trying the replicas in
// turn; it gives up only on an answer no retry mends or after a minute.
func (l *load) send(first int, key string, orders []string, body []byte) (ack, bool) {
	giveUp := time.Now().Add(time.Minute)
	for attempt := 0; ; attempt++ {
		targets := *l.targets.Load()
		target := targets[(first+attempt)%len(targets)]
		a, kind, err := l.post(target, key, orders, body)
		if err == nil {
			return a, true
		}
		l.mu.Lock()
		l.failures[kind]++
		if kind == "bad" || time.Now().After(giveUp) {
			l.bad = append(l.bad, err.Error())
			l.mu.Unlock()
			return ack{}, false
		}
		l.mu.Unlock()
		if kind != "refused" {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// post sends one attempt; kind names a failure: refused, reset,
// unavailable (503), or bad.
func (l *load) post(target, key string, orders []string, body []byte) (ack, string, error) {
	url := target + "/v1/pools/" + l.spec.pool + "/batches"
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return ack{}, "bad", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+userToken)
	req.Header.Set("Idempotency-Key", key)
	resp, err := l.client.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) {
			return ack{}, "refused", err
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
		if err := json.Unmarshal(data, &b); err != nil || b.BatchID == "" || len(b.Assignments) != len(orders) {
			return ack{}, "bad", fmt.Errorf("201 for %s: %v: %s", key, err, data)
		}
		a := ack{key: key, batchID: b.BatchID, target: target, orders: orders, assigned: map[string]string{},
			replayed: resp.Header.Get("Idempotent-Replayed") == "true", at: time.Now()}
		for _, as := range b.Assignments {
			a.assigned[as.OrderID] = as.CompID
		}
		return a, "", nil
	case http.StatusServiceUnavailable:
		return ack{}, "unavailable", fmt.Errorf("POST %s key %s: 503 %s", url, key, data)
	}
	return ack{}, "bad", fmt.Errorf("POST %s key %s: %d %s", url, key, resp.StatusCode, data)
}

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

// summary describes the load for the log.
func (l *load) summary() string {
	orders, replays := 0, 0
	for _, a := range l.acks {
		orders += len(a.orders)
		if a.replayed {
			replays++
		}
	}
	return fmt.Sprintf("%d batches (%d orders) acknowledged, %d of them replays; failed attempts: %s",
		len(l.acks), orders, replays, l.failureSummary())
}

// verify checks through base that every acknowledged batch is recorded as
// answered, and that the pool's Scales hold exactly the acknowledged
// orders: none lost, none twice.
func verify(tb testing.TB, base string, l *load) {
	tb.Helper()
	pool := base + "/v1/pools/" + l.spec.pool
	var (
		mu       sync.Mutex
		perScale = map[string]int{}
		problems []string
		lost     int
		wg       sync.WaitGroup
		next     atomic.Int64
	)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(l.acks) {
					return
				}
				a := l.acks[i]
				status, data, err := get(pool + "/batches/" + a.batchID)
				var b batchAnswer
				mu.Lock()
				if err != nil || status != http.StatusOK || json.Unmarshal(data, &b) != nil {
					problems = append(problems, fmt.Sprintf("batch %s (key %s, acknowledged by %s): got %d %s %v, want 200", a.batchID, a.key, a.target, status, data, err))
					lost++
				}
				for _, as := range b.Assignments {
					if a.assigned[as.OrderID] != as.CompID {
						problems = append(problems, fmt.Sprintf("batch %s: order %s recorded on %s, answered %s", a.batchID, as.OrderID, as.CompID, a.assigned[as.OrderID]))
					}
					perScale[as.CompID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, p := range problems {
		if i == 10 {
			tb.Errorf("… and %d more", len(problems)-10)
			break
		}
		tb.Error(p)
	}
	if lost > 0 {
		tb.Errorf("%d of %d acknowledged batches lost", lost, len(l.acks))
	}
	var scales struct {
		Scales []struct {
			CompID      string `json:"compId"`
			Outstanding int    `json:"outstanding"`
		} `json:"scales"`
	}
	mustCall(tb, http.MethodGet, pool+"/scales", userToken, "", http.StatusOK, &scales)
	for _, sc := range scales.Scales {
		if sc.Outstanding != perScale[sc.CompID] {
			tb.Errorf("Scale %s: outstanding %d, want the %d acknowledged orders on it", sc.CompID, sc.Outstanding, perScale[sc.CompID])
		}
	}
}

// get GETs url with the client token, for any goroutine.
func get(url string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+userToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
