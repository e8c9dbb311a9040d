package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
)

// faultyProxy stands between the client and the service and spoils the
// first attempt of every batch (by Idempotency-Key), in turn:
//   - drop: forwards the request, waits for the service's answer (so the
//     batch is applied), then closes the client's connection without a
//     reply;
//   - unknown: forwards it and answers 503 outcome-unknown instead of the
//     service's reply;
//   - refuse: reads the request and closes the connection without
//     forwarding it.
//
// Later attempts pass through.
type faultyProxy struct {
	target string
	http   *http.Client

	mu   sync.Mutex
	seen map[string]bool
	n    int // first attempts so far

	dropped, unknown, refused, passed atomic.Int64
}

func (p *faultyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fault := -1
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		p.mu.Lock()
		if !p.seen[key] {
			p.seen[key] = true
			fault = p.n % 3
			p.n++
		}
		p.mu.Unlock()
	}
	if fault == 2 {
		p.refused.Add(1)
		closeConn(w)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	res, err := p.http.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	reply, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	switch fault {
	case 0:
		p.dropped.Add(1)
		closeConn(w)
		return
	case 1:
		p.unknown.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"urn:dispatcher:problem:outcome-unknown","title":"Outcome unknown","status":503,"detail":"injected by the test's proxy","batchId":"unknown"}`)
		return
	}
	p.passed.Add(1)
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(reply)
}

// closeConn closes the connection of w without writing a reply.
func closeConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic("e2e: hijack: " + err.Error())
	}
	_ = conn.Close()
}

// TestDispatchRetriesApplyOnce dispatches batches through a proxy that
// loses the first reply of every batch after the service applied it (or
// says the outcome is unknown, or loses the request before the service
// saw it). Dispatch retries with its own Idempotency-Key: every batch must
// be applied exactly once, its orders with ids and without.
func TestDispatchRetriesApplyOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{})
		proxy := &faultyProxy{target: srv.url, http: &http.Client{}, seen: map[string]bool{}}
		front := httptest.NewServer(proxy)
		t.Cleanup(front.Close)
		fast := client.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}
		c := newClient(t, front.URL, client.WithRetry(fast))
		direct := newClient(t, srv.url)
		ctx := context.Background()

		if _, err := direct.PutPool(ctx, "eu", client.PoolInput{}); err != nil {
			t.Fatalf("PutPool: %v", err)
		}
		for i := range 5 {
			if _, err := direct.PutScale(ctx, "eu", fmt.Sprintf("S%d", i), client.ScaleInput{}); err != nil {
				t.Fatalf("PutScale: %v", err)
			}
		}

		const workers, batches, size = 4, 15, 7 // each batch: 4 orders with ids, 3 without
		var wg sync.WaitGroup
		errs := make(chan error, workers*batches)
		got := make([][]*client.Batch, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range batches {
					in := client.BatchInput{}
					for i := range size {
						id := ""
						if i < 4 {
							id = fmt.Sprintf("w%d-b%d-o%d", w, b, i)
						}
						in.Orders = append(in.Orders, client.OrderInput{ID: id})
					}
					batch, err := c.Dispatch(ctx, "eu", in, nil)
					if err != nil {
						errs <- fmt.Errorf("worker %d batch %d: %w", w, b, err)
						return
					}
					got[w] = append(got[w], batch)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		total := int64(workers * batches * size)
		if d, u, r := proxy.dropped.Load(), proxy.unknown.Load(), proxy.refused.Load(); d+u+r != workers*batches || d == 0 || u == 0 || r == 0 {
			t.Fatalf("proxy spoiled %d+%d+%d first attempts, want all %d of them, each kind some", d, u, r, workers*batches)
		}
		var outstanding int64
		for s, err := range direct.ListScales(ctx, "eu", nil) {
			if err != nil {
				t.Fatalf("ListScales: %v", err)
			}
			outstanding += s.Outstanding
		}
		if outstanding != total {
			t.Fatalf("the Scales hold %d orders, want the %d sent: a retry was applied twice (or lost)", outstanding, total)
		}
		seen := map[string]bool{}
		for w := range got {
			for _, b := range got[w] {
				if len(b.Assignments) != size {
					t.Fatalf("batch %s has %d assignments, want %d", b.BatchID, len(b.Assignments), size)
				}
				stored, err := direct.GetBatch(ctx, "eu", b.BatchID)
				if err != nil || compIDs(stored.Assignments) != compIDs(b.Assignments) {
					t.Fatalf("GetBatch(%s) = %+v, %v; want what Dispatch answered", b.BatchID, stored, err)
				}
				for _, a := range b.Assignments {
					if seen[a.OrderID] {
						t.Fatalf("order %s answered twice", a.OrderID)
					}
					seen[a.OrderID] = true
					o, err := direct.GetOrder(ctx, "eu", a.OrderID)
					if err != nil || o.BatchID != b.BatchID || o.CompID != a.CompID {
						t.Fatalf("GetOrder(%s) = %+v, %v; want it in batch %s on %s", a.OrderID, o, err, b.BatchID, a.CompID)
					}
				}
			}
		}
	})
}

// TestRetryHonoursRetryAfterAndContext checks the backoff against a
// service that refuses with 429 and Retry-After: the client waits at least
// that long, and gives up at once when the context's deadline would pass
// first or the context is cancelled.
func TestRetryHonoursRetryAfterAndContext(t *testing.T) {
	srv := newServer(t, stores[0].open(t), serverOptions{})
	var refusals atomic.Int64
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refusals.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"type":"urn:dispatcher:problem:rate-limited","title":"Too many requests","status":429,"detail":"slow down"}`)
			return
		}
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, srv.url+r.URL.RequestURI(), r.Body)
		out.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	}))
	t.Cleanup(limited.Close)
	fast := client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
	c := newClient(t, limited.URL, client.WithRetry(fast))

	start := time.Now()
	if _, err := c.Healthz(context.Background()); err != nil {
		t.Fatalf("Healthz after one 429: %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("retried after %v, want at least the Retry-After of 1s", waited)
	}

	refusals.Store(0)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.Healthz(ctx)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || e.RetryAfter != time.Second || e.Type != "rate-limited" {
		t.Fatalf("Healthz with a deadline before the Retry-After: %v, want the 429 at once", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the client waited past the deadline")
	}

	refusals.Store(0)
	ctx, cancel = context.WithCancel(context.Background())
	// Cancel once the refusal has been sent, inside the client's 1 s wait
	// for Retry-After: a timer from the start could fire before a slow
	// machine delivers the 429.
	go func() {
		for refusals.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	_, err = c.Healthz(ctx)
	if !errors.Is(err, context.Canceled) || !errors.As(err, &e) || e.Status != http.StatusTooManyRequests {
		t.Fatalf("Healthz cancelled during the wait: %v, want the 429 and context.Canceled", err)
	}
	if n := refusals.Load(); n != 1 {
		t.Fatalf("%d attempts after the cancel, want 1", n)
	}
}
