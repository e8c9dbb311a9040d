package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dispatcher/dispatcher/api"
)

// scrape returns the server's metrics in the Prometheus text format.
func (e *env) scrape(t testing.TB, headers ...string) string {
	t.Helper()
	resp := e.must(t, http.StatusOK, nil, "GET", "/metrics", "", headers...)
	if ct := resp.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("metrics Content-Type %q, want text/plain", ct)
	}
	return string(resp.body)
}

// wantMetric fails t unless the exposition holds the sample line.
func wantMetric(t testing.TB, exposition, line string) {
	t.Helper()
	for l := range strings.SplitSeq(exposition, "\n") {
		if l == line {
			return
		}
	}
	t.Errorf("no sample %s in the metrics", line)
}

func TestMetricsAfterDispatch(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p/scales/S1", "")
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p/batches", ordersJSON("o-1", "o-2", "o-3"), "Idempotency-Key", "k-1")
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p/batches", ordersJSON("o-1", "o-2", "o-3"), "Idempotency-Key", "k-1") // a replay
	e.must(t, http.StatusOK, nil, "POST", "/v1/pools/p/batches?dryRun=true", ordersJSON("o-9"))                                  // a dry run
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p/batches", ordersJSON("o-4"))
	e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/p/orders/nope", "")
	e.must(t, http.StatusNotFound, nil, "GET", "/nowhere/at/all", "")

	m := e.scrape(t)
	for _, line := range []string{
		`dispatcher_orders_dispatched_total{pool="p",strategy="waterfill"} 4`,
		`dispatcher_batches_total{pool="p",strategy="waterfill"} 2`,
		`dispatcher_batch_orders_count{strategy="waterfill"} 2`,
		`dispatcher_batch_orders_sum{strategy="waterfill"} 4`,
		`dispatcher_batch_orders_bucket{strategy="waterfill",le="2"} 1`,
		`dispatcher_http_requests_total{method="POST",route="/v1/pools/{pool}/batches",status="201"} 3`,
		`dispatcher_http_requests_total{method="POST",route="/v1/pools/{pool}/batches",status="200"} 1`,
		`dispatcher_http_requests_total{method="GET",route="/v1/pools/{pool}/orders/{orderId}",status="404"} 1`,
		`dispatcher_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`dispatcher_http_request_duration_seconds_count{method="PUT",route="/v1/pools/{pool}"} 1`,
	} {
		wantMetric(t, m, line)
	}
	for _, raw := range []string{"/v1/pools/p/", "/nowhere", "o-1", "k-1"} {
		if strings.Contains(m, raw) {
			t.Errorf("the metrics show %q from a raw path or body", raw)
		}
	}
	for _, name := range []string{"go_goroutines ", "process_cpu_seconds_total "} {
		if !strings.Contains(m, "\n"+name) {
			t.Errorf("no %s: the Go and process collectors are missing", name)
		}
	}
	// The scrape itself is counted, for the next one.
	wantMetric(t, e.scrape(t), `dispatcher_http_requests_total{method="GET",route="/metrics",status="200"} 1`)
}

func TestMetricsPoolCap(t *testing.T) {
	metrics := api.NewMetrics(prometheus.NewRegistry(), 2)
	e := newEnv(t, withAPI(func(o *api.Options) { o.Metrics = metrics }))
	for _, pool := range []string{"p1", "p2", "p3", "p4"} {
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/"+pool, "")
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/"+pool+"/scales/S1", "")
	}
	for i, pool := range []string{"p1", "p2", "p3", "p4", "p1"} {
		e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/"+pool+"/batches", ordersJSON(fmt.Sprintf("o-%d", i)))
	}
	m := e.scrape(t)
	wantMetric(t, m, `dispatcher_batches_total{pool="p1",strategy="waterfill"} 2`)
	wantMetric(t, m, `dispatcher_batches_total{pool="p2",strategy="waterfill"} 1`)
	wantMetric(t, m, `dispatcher_batches_total{pool="_other",strategy="waterfill"} 2`)
	if strings.Contains(m, `pool="p3"`) || strings.Contains(m, `pool="p4"`) {
		t.Errorf("pools beyond the cap have labels of their own:\n%s", m)
	}
	if got := metrics.PoolLabel("p2"); got != "p2" {
		t.Errorf("PoolLabel(p2) = %q, want p2", got)
	}
}

func TestPoolLabelConcurrent(t *testing.T) {
	const limit = 10
	m := api.NewMetrics(prometheus.NewRegistry(), limit)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		named = map[string]bool{}
	)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				pool := fmt.Sprintf("p%d", (g*7+i)%40)
				if l := m.PoolLabel(pool); l != api.OtherPool {
					if l != pool {
						t.Errorf("PoolLabel(%s) = %s", pool, l)
					}
					mu.Lock()
					named[l] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(named) != limit {
		t.Errorf("%d pools got a label of their own, want the cap %d", len(named), limit)
	}
}

func TestNewMetricsPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	api.NewMetrics(reg, 1)
	for name, f := range map[string]func(){
		"nil registry":     func() { api.NewMetrics(nil, 1) },
		"negative cap":     func() { api.NewMetrics(prometheus.NewRegistry(), -1) },
		"registered twice": func() { api.NewMetrics(reg, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if v := recover(); v == nil || !strings.HasPrefix(fmt.Sprint(v), "api: ") {
					t.Errorf("got panic %v, want one naming the package", v)
				}
			}()
			f()
		})
	}
}

// TestObserveCoalesced checks the histogram of batches per coalesced store
// call.
func TestObserveCoalesced(t *testing.T) {
	reg := api.NewRegistry()
	m := api.NewMetrics(reg, 10)
	m.ObserveCoalesced(3)
	m.ObserveCoalesced(1)
	m.ObserveCoalesced(40)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if mf.GetName() != "dispatcher_coalesced_batches" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		got = append(got, fmt.Sprintf("count %d sum %g", h.GetSampleCount(), h.GetSampleSum()))
		for _, b := range h.GetBucket() {
			got = append(got, fmt.Sprintf("le %g: %d", b.GetUpperBound(), b.GetCumulativeCount()))
		}
	}
	want := []string{"count 3 sum 44", "le 1: 1", "le 2: 1", "le 4: 2", "le 8: 2", "le 16: 2",
		"le 32: 2", "le 64: 3", "le 128: 3", "le 256: 3"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("dispatcher_coalesced_batches: got %q, want %q", got, want)
	}
}
