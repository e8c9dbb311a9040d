// Package loadtest is the load of the fault tests of cmd/dispatcher and of
// the image suite (deploy/imagetest): workers that send batches of orders
// with ids and an Idempotency-Key each, and retry every batch that gets no
// 201 with the same key and body on the next replica until it does, so
// that a test can then check that each acknowledged batch is recorded
// once, whatever it broke meanwhile.
package loadtest

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Spec describes a load.
type Spec struct {
	Pool   string
	Prefix string // makes this load's order ids and keys unique
	// Token, when set, is sent as the bearer token.
	Token   string
	Workers int
	// Batches is how many batches each worker sends; 0: until Finish.
	Batches int
	// Orders is the size of worker w's batch b; nil: 1.
	Orders func(w, b int) int
	// Keys gives every order a key (cust-0 … cust-4).
	Keys bool
	// Targets returns the replicas' base URLs; attempt n of a batch goes
	// to Targets()[(first+n) % len], first spreading the workers.
	Targets func() []string
	// Primary sends every first attempt to Targets()[0], and only the
	// retries elsewhere.
	Primary bool
	// GiveUp ends the retries of a batch that has no 201 yet; 0: a minute.
	GiveUp time.Duration
	// Pause is the wait after a failed attempt but a refused connection
	// (the next replica is tried at once), doubling up to MaxPause;
	// 0: 5 ms and 200 ms.
	Pause, MaxPause time.Duration
	// Timeout bounds each attempt; 0: 10 s.
	Timeout time.Duration
}

// Ack is a batch answered 201.
type Ack struct {
	Key, BatchID, Target string
	Orders               []string          // in request order
	Assigned             map[string]string // orderId → compId, as answered
	Replayed             bool              // Idempotent-Replayed: true
	Attempts             int
	At                   time.Time // when the 201 arrived
}

// Pending is a batch that has not got its 201 (yet).
type Pending struct {
	Key    string
	Orders []string
}

// Load runs a Spec. Acked may be read while it runs; the slices under Mu
// too, holding Mu.
type Load struct {
	Spec   Spec
	Client *http.Client
	Start  time.Time
	acked  atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup

	Mu       sync.Mutex
	Acks     []Ack
	Unacked  []Pending      // batches given up on
	Failures map[string]int // failed attempts by kind (see Post)
	Unknown  []string       // batchIds of 503 outcome-unknown answers
	Bad      []string       // answers no retry can mend (4xx, 500)
}

// New returns a Load of spec that sends nothing until Start, or a test's
// own Posts.
func New(spec Spec) *Load {
	if spec.GiveUp == 0 {
		spec.GiveUp = time.Minute
	}
	if spec.Pause == 0 {
		spec.Pause, spec.MaxPause = 5*time.Millisecond, 200*time.Millisecond
	}
	if spec.Timeout == 0 {
		spec.Timeout = 10 * time.Second
	}
	return &Load{
		Spec: spec,
		Client: &http.Client{
			Timeout:   spec.Timeout,
			Transport: &http.Transport{MaxIdleConnsPerHost: max(spec.Workers, 2), DisableCompression: true},
		},
		stop:     make(chan struct{}),
		Failures: map[string]int{},
	}
}

// Start starts the workers of a load of spec; the idle connections are
// closed when tb ends.
func Start(tb testing.TB, spec Spec) *Load {
	tb.Helper()
	l := New(spec)
	tb.Cleanup(l.Client.CloseIdleConnections)
	l.Start = time.Now()
	for w := range spec.Workers {
		l.wg.Go(func() { l.worker(w) })
	}
	return l
}

// Acked is how many batches have been acknowledged.
func (l *Load) Acked() int64 { return l.acked.Load() }

// WaitAcked waits until n batches in all are acknowledged, at most d.
func (l *Load) WaitAcked(tb testing.TB, n int64, d time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for l.acked.Load() < n {
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d batches acknowledged in %s; failed attempts: %s", l.acked.Load(), n, d, l.FailureSummary())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Wait waits for every worker to send its batches and fails tb on answers
// that a retry cannot mend.
func (l *Load) Wait(tb testing.TB) {
	tb.Helper()
	l.wg.Wait()
	if len(l.Bad) > 0 {
		tb.Errorf("%d answers no retry mends, e.g. %s", len(l.Bad), l.Bad[0])
	}
}

// Finish stops the workers once their current batch is acknowledged (or
// given up), waits as Wait does, and fails tb on the batches given up.
func (l *Load) Finish(tb testing.TB) {
	tb.Helper()
	close(l.stop)
	l.Wait(tb)
	if len(l.Unacked) > 0 {
		tb.Errorf("%d batches never acknowledged (e.g. %s); failed attempts: %s", len(l.Unacked), l.Unacked[0].Key, l.FailureSummary())
	}
}

// Replays counts the acknowledgements that were replays of a batch an
// earlier attempt had applied.
func (l *Load) Replays() int {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	n := 0
	for _, a := range l.Acks {
		if a.Replayed {
			n++
		}
	}
	return n
}

// FailureSummary lists the failed attempts by kind, in a stable order.
func (l *Load) FailureSummary() string {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	var kinds []string
	for k, n := range l.Failures {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, " ")
}

// Summary describes the load for a log.
func (l *Load) Summary() string {
	l.Mu.Lock()
	batches, orders := len(l.Acks), 0
	for _, a := range l.Acks {
		orders += len(a.Orders)
	}
	l.Mu.Unlock()
	return fmt.Sprintf("%d batches (%d orders) acknowledged, %d of them replays; failed attempts: %s",
		batches, orders, l.Replays(), l.FailureSummary())
}

func (l *Load) worker(w int) {
	s := l.Spec
	for b := 0; s.Batches == 0 || b < s.Batches; b++ {
		select {
		case <-l.stop:
			return
		default:
		}
		n := 1
		if s.Orders != nil {
			n = s.Orders(w, b)
		}
		p := Pending{Key: fmt.Sprintf("%s.w%d.b%d", s.Prefix, w, b)}
		var body bytes.Buffer
		body.WriteString(`{"orders":[`)
		for j := range n {
			id := fmt.Sprintf("%s.o%d", p.Key, j)
			p.Orders = append(p.Orders, id)
			if j > 0 {
				body.WriteByte(',')
			}
			if s.Keys {
				fmt.Fprintf(&body, `{"id":%q,"key":"cust-%d"}`, id, (w+j)%5)
			} else {
				fmt.Fprintf(&body, `{"id":%q}`, id)
			}
		}
		body.WriteString(`]}`)
		first := w + b
		if s.Primary {
			first = 0
		}
		a, ok := l.send(first, p, body.Bytes())
		l.Mu.Lock()
		if ok {
			l.Acks = append(l.Acks, a)
			l.acked.Add(1)
		} else {
			l.Unacked = append(l.Unacked, p)
		}
		l.Mu.Unlock()
	}
}

// send posts one batch until it is answered 201, trying the replicas in
// turn, and gives up after Spec.GiveUp or on an answer no retry mends.
func (l *Load) send(first int, p Pending, body []byte) (Ack, bool) {
	giveUp := time.Now().Add(l.Spec.GiveUp)
	pause := l.Spec.Pause
	for attempt := 0; ; attempt++ {
		targets := l.Spec.Targets()
		target := targets[(first+attempt)%len(targets)]
		a, kind, err := l.Post(target, p, body)
		if err == nil {
			a.Attempts = attempt + 1
			return a, true
		}
		l.Mu.Lock()
		l.Failures[kind]++
		if kind == "bad" {
			l.Bad = append(l.Bad, err.Error())
		}
		l.Mu.Unlock()
		if kind == "bad" || time.Now().After(giveUp) {
			return Ack{}, false
		}
		if kind != "refused" { // a refused connection costs nothing: try the next at once
			time.Sleep(pause)
			pause = min(2*pause, max(l.Spec.MaxPause, l.Spec.Pause))
		}
	}
}

// UpTo is a Spec.Orders of 1 to n orders a batch, varied by worker and
// batch.
func UpTo(n int) func(w, b int) int {
	return func(w, b int) int { return 1 + (w*7+b*3)%n }
}
