package redis_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestMetricsHook: the hook times each script by name, counts failed
// calls by code, and leaves the store's domain answers out of the errors.
func TestMetricsHook(t *testing.T) {
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	m := redis.NewMetrics(reg)
	c := newClient(t, srv)
	c.AddHook(m.Hook())
	s := redis.New(c, redis.Options{})
	ctx := context.Background()

	poolWithScales(t, s, "p", 2)
	if _, err := dispatchRetrying(s, "p", "b1", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPool(ctx, "nope"); err == nil {
		t.Fatal("GetPool of an unknown pool: no error")
	}
	// A FUNCTION LOAD that finds the library loaded, as replicas that load
	// it at once after a flush or a restart do, got what it wanted.
	lib := "#!lua name=metricstest\nredis.register_function('metricstest_f', function() return 1 end)"
	if err := c.Do(ctx, "FUNCTION", "LOAD", lib).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "FUNCTION", "LOAD", lib).Err(); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("FUNCTION LOAD again: %v, want 'already exists'", err)
	}
	got := gather(t, reg)
	for script, want := range map[string]uint64{"pool_put": 1, "scale_put": 2, "dispatch": 1, "read": 1} {
		if n := got.histogramCount("dispatcher_redis_script_duration_seconds", "script", script); n != want {
			t.Errorf("script %s: %d observations, want %d", script, n, want)
		}
	}
	if n := got.value("dispatcher_redis_errors_total"); n != 0 {
		t.Errorf("errors after an unknown pool and a library loaded twice: got %v, want 0", n)
	}

	srv.Stop()
	if _, err := dispatchOnce(s, "p", "b2"); err == nil {
		t.Fatal("Dispatch with Redis stopped: no error")
	}
	if n := gather(t, reg).value("dispatcher_redis_errors_total", "call", "dispatch", "code", "network"); n != 1 {
		t.Errorf(`errors{call="dispatch",code="network"} with Redis stopped: got %v, want 1`, n)
	}
}

// TestOutstandingCollector: the gauge equals the Scales' outstanding
// orders through dispatches, completions, cancellations, a forced Scale
// deletion and the sweep of expired orders, and the records gauge what
// Redis holds; it reports only the pools the label function names.
func TestOutstandingCollector(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	s := redis.New(c, redis.Options{Retention: time.Minute})
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c"} {
		poolWithScales(t, s, p, 3)
	}
	reg := prometheus.NewRegistry()
	// A cap of two pool labels, taken by a and b.
	reg.MustRegister(s.OutstandingCollector(func(p string) string {
		if p == "a" || p == "b" {
			return p
		}
		return "_other"
	}, 10))

	check := func(step string) {
		t.Helper()
		got := gather(t, reg)
		for _, p := range []string{"a", "b"} {
			if g, want := got.value("dispatcher_outstanding_orders", "pool", p), float64(sumOutstanding(t, s, p)); g != want {
				t.Errorf("%s: pool %s: gauge %v, want the Scales' %v", step, p, g, want)
			}
		}
		if got.has("dispatcher_outstanding_orders", "pool", "c") || got.has("dispatcher_outstanding_orders", "pool", "_other") ||
			got.has("dispatcher_records", "pool", "c") {
			t.Errorf("%s: pool c, beyond the label cap, is reported", step)
		}
		for _, p := range []string{"a", "b"} {
			recs := records(t, c, p)
			for _, kind := range []string{"orders", "batches", "keys"} {
				if g, n := got.value("dispatcher_records", "pool", p, "kind", kind), recs[kind]; g != float64(n) {
					t.Errorf("%s: pool %s: %s records %v, want the %d in Redis", step, p, kind, g, n)
				}
			}
		}
		if n := got.value("dispatcher_pools"); n != 3 {
			t.Errorf("%s: dispatcher_pools %v, want 3", step, n)
		}
	}
	check("empty")
	now := time.Now()
	var orders []string
	for i, p := range []string{"a", "a", "b", "c"} {
		req := batchRequest(p, "b"+string(rune('0'+i)), 10)
		req.Now = now
		if i == 1 {
			req.IdempotencyKey, req.Fingerprint = "k1", "fp"
		}
		b, _, err := s.Dispatch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if p == "a" {
			for _, a := range b.Assignments {
				orders = append(orders, a.OrderID)
			}
		}
	}
	check("dispatched")
	if _, _, err := s.Complete(ctx, "a", []dispatch.Completion{{OrderID: orders[0]}, {OrderID: orders[1]}}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, "a", orders[2], now); err != nil {
		t.Fatal(err)
	}
	check("completed and cancelled")
	if err := s.DeleteScale(ctx, "a", "S0", true, now); err != nil {
		t.Fatal(err)
	}
	check("Scale deleted with its orders")
	// Past the retention, a mutating call sweeps the finished orders.
	later := now.Add(2 * time.Minute)
	if _, _, err := s.PutScale(ctx, "a", "S9", dispatch.ScaleSpec{}, later); err != nil {
		t.Fatal(err)
	}
	req := batchRequest("a", "late", 5)
	req.Now = later
	if _, _, err := s.Dispatch(ctx, req); err != nil {
		t.Fatal(err)
	}
	check("swept")
	if err := s.DeletePool(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if got := gather(t, reg); got.has("dispatcher_outstanding_orders", "pool", "b") || got.value("dispatcher_pools") != 2 {
		t.Errorf("after deleting pool b: still reported, or dispatcher_pools %v, want 2", got.value("dispatcher_pools"))
	}
}

func dispatchOnce(s dispatch.Store, pool, batchID string) (dispatch.Batch, error) {
	b, _, err := s.Dispatch(context.Background(), batchRequest(pool, batchID, 1))
	return b, err
}

// families is a gathered registry.
type families []*dto.MetricFamily

func gather(t testing.TB, reg *prometheus.Registry) families {
	t.Helper()
	fs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return fs
}

// find returns the metrics of family name whose labels include the pairs
// of labels.
func (fs families) find(name string, labels ...string) []*dto.Metric {
	var out []*dto.Metric
	for _, f := range fs {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
					return l.GetName() == labels[i] && l.GetValue() == labels[i+1]
				}) {
					continue metrics
				}
			}
			out = append(out, m)
		}
	}
	return out
}

func (fs families) has(name string, labels ...string) bool { return len(fs.find(name, labels...)) > 0 }

// value sums the counters and gauges of name with labels.
func (fs families) value(name string, labels ...string) float64 {
	var v float64
	for _, m := range fs.find(name, labels...) {
		v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return v
}

func (fs families) histogramCount(name string, labels ...string) uint64 {
	var n uint64
	for _, m := range fs.find(name, labels...) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}
