package api

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultMaxPoolLabels is the cap on distinct pool label values that New
// uses when Options.Metrics is nil.
const DefaultMaxPoolLabels = 100

// OtherPool is the pool label of every pool beyond the cap. Pool names
// start with a letter or digit, so it names no pool.
const OtherPool = "_other"

// Metrics is the Prometheus instrumentation of the dispatcher, on a
// registry of its own (never the global default one), served by the API at
// GET /metrics.
//
// Every label has a bounded set of values: route is the chi route pattern
// (never the raw path), method one of the routed methods or OTHER, status
// an HTTP status, strategy one of dispatch.Strategies, and pool one of the
// first MaxPools pools that dispatched in this process, OtherPool for the
// rest.
//
// Packages that api must not be imported by (the stores) add their
// metrics in one of two ways: they register their own collectors on
// Registry, or they take plain hook functions that main wires to methods
// added to this type. Either way, per-pool labels go through PoolLabel so
// the one cap holds for all.
type Metrics struct {
	reg       *prometheus.Registry
	pools     poolLabels
	requests  *prometheus.CounterVec
	durations *prometheus.HistogramVec
	orders    *prometheus.CounterVec
	batches   *prometheus.CounterVec
	batchSize *prometheus.HistogramVec
	coalesced prometheus.Histogram
	// health counts changes of Scale health, moved orders moved, and
	// dropped the changes a pool's journal dropped unreported.
	health, moved, dropped *prometheus.CounterVec
	auth                   *authMetrics
	// series caches the children of requests and durations, and batchSeries
	// those of orders, batches and batchSize, by their labels: a lookup
	// there costs less than hashing the label values on every request.
	// Their keys are bounded as the labels are.
	series      sync.Map // requestLabels -> *requestSeries
	batchSeries sync.Map // batchLabels -> *batchSeriesOf
}

type requestLabels struct {
	route, method string
	status        int
}

type requestSeries struct {
	count prometheus.Counter
	took  prometheus.Observer
}

type batchLabels struct{ pool, strategy string }

type batchSeriesOf struct {
	orders, batches prometheus.Counter
	size            prometheus.Observer
}

// seriesOf returns the series that cache holds for labels k, made by mk
// (and kept) the first time k is seen.
func seriesOf[K comparable, V any](cache *sync.Map, k K, mk func() V) V {
	if v, ok := cache.Load(k); ok {
		return v.(V)
	}
	v, _ := cache.LoadOrStore(k, mk())
	return v.(V)
}

// NewRegistry returns a registry holding the Go runtime and process
// collectors, for NewMetrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// NewMetrics registers the API's collectors on reg and returns them.
// maxPools caps the distinct pool label values (0: every pool is
// OtherPool). It panics if reg is nil, maxPools is negative, or reg
// already holds the API's collectors.
func NewMetrics(reg *prometheus.Registry, maxPools int) *Metrics {
	if reg == nil {
		panic("api: NewMetrics with a nil registry")
	}
	if maxPools < 0 {
		panic("api: NewMetrics with a negative pool cap")
	}
	m := &Metrics{
		reg:   reg,
		pools: poolLabels{max: maxPools, seen: map[string]struct{}{}},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dispatcher_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		orders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_orders_dispatched_total",
			Help: "Orders assigned to Scales, by pool and strategy; replays and dry runs excluded.",
		}, []string{"pool", "strategy"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_batches_total",
			Help: "Batches dispatched, by pool and strategy; replays and dry runs excluded.",
		}, []string{"pool", "strategy"}),
		// By strategy only: the mean batch size of a pool is
		// orders_dispatched_total / batches_total, without a histogram
		// series per pool.
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dispatcher_batch_orders",
			Help:    "Orders per dispatched batch, by strategy.",
			Buckets: []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 100000},
		}, []string{"strategy"}),
		coalesced: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dispatcher_coalesced_batches",
			Help:    "Batches per store call when concurrent dispatches of one pool share a call (1: sent alone).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}),
		health: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_scale_health_changes_total",
			Help: "Changes of Scale health, by pool and the new health (up, lapsed, ejected); each change is counted by one replica.",
		}, []string{"pool", "health"}),
		moved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_orders_moved_total",
			Help: "Orders moved to another Scale, by pool and reason (lapse, fail, reassign).",
		}, []string{"pool", "reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_scale_health_changes_dropped_total",
			Help: "Changes of Scale health that a pool's journal dropped before any replica reported them, by pool.",
		}, []string{"pool"}),
		auth: newAuthMetrics(),
	}
	for _, c := range append([]prometheus.Collector{m.requests, m.durations, m.orders, m.batches, m.batchSize, m.coalesced, m.health, m.moved, m.dropped}, m.auth.collectors()...) {
		if err := reg.Register(c); err != nil {
			panic("api: NewMetrics: " + err.Error())
		}
	}
	return m
}

// Registry returns the registry served at GET /metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RegisterBuildInfo registers dispatcher_build_info, a gauge of 1 whose
// labels name the running build: version, revision and the Go version.
// It panics when called twice on one registry.
func (m *Metrics) RegisterBuildInfo(version, revision, goVersion string) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "dispatcher_build_info",
		Help:        "The running build: 1, labelled by version, revision and goversion.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
	}, func() float64 { return 1 }))
}

// PoolLabel returns the label value of pool: the pool's name for the first
// MaxPools distinct pools it is asked about, OtherPool for any other.
// Slots are never freed: a process sees at most MaxPools pool series per
// metric, whatever pools come and go.
func (m *Metrics) PoolLabel(pool string) string { return m.pools.label(pool) }

// ObserveBatch counts a batch of n orders dispatched in pool with
// strategy.
func (m *Metrics) ObserveBatch(pool, strategy string, n int) {
	k := batchLabels{m.PoolLabel(pool), strategy}
	bs := seriesOf(&m.batchSeries, k, func() *batchSeriesOf {
		return &batchSeriesOf{
			orders:  m.orders.WithLabelValues(k.pool, strategy),
			batches: m.batches.WithLabelValues(k.pool, strategy),
			size:    m.batchSize.WithLabelValues(strategy),
		}
	})
	bs.orders.Add(float64(n))
	bs.batches.Inc()
	bs.size.Observe(float64(n))
}

// ObserveCoalesced records one store call that carried batches batches,
// for dispatch.Config.ObserveCoalesced.
func (m *Metrics) ObserveCoalesced(batches int) {
	m.coalesced.Observe(float64(batches))
}

// observeRequest counts one answered request.
func (m *Metrics) observeRequest(route, method string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	k := requestLabels{route, methodLabel(method), status}
	rs := seriesOf(&m.series, k, func() *requestSeries {
		return &requestSeries{
			count: m.requests.WithLabelValues(route, k.method, strconv.Itoa(status)),
			took:  m.durations.WithLabelValues(route, k.method),
		}
	})
	rs.count.Inc()
	rs.took.Observe(d.Seconds())
}

// methodLabel bounds the method label: clients may send any token as a
// method.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete,
		http.MethodPatch, http.MethodOptions:
		return method
	}
	return "OTHER"
}

// handler serves the registry in the Prometheus text format. A collector
// that fails is logged and left out rather than failing the scrape.
func (m *Metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// poolLabels hands out at most max distinct pool label values.
type poolLabels struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
}

func (p *poolLabels) label(pool string) string {
	p.mu.RLock()
	_, ok := p.seen[pool]
	full := len(p.seen) >= p.max
	p.mu.RUnlock()
	switch {
	case ok:
		return pool
	case full:
		return OtherPool
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.seen[pool]; !ok {
		if len(p.seen) >= p.max {
			return OtherPool
		}
		p.seen[pool] = struct{}{}
	}
	return pool
}
