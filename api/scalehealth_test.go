package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
)

// healthScale is a Scale as the API shows its health.
type healthScale struct {
	CompID          string  `json:"compId"`
	State           string  `json:"state"`
	Health          string  `json:"health"`
	LastHeartbeatAt string  `json:"lastHeartbeatAt"`
	EjectedUntil    *string `json:"ejectedUntil"`
	Failures        int64   `json:"failures"`
	BaseLoad        int64   `json:"baseLoad"`
}

type movedOrder struct {
	OrderID string `json:"orderId"`
	CompID  string `json:"compId"`
	State   string `json:"state"`
	Moves   int64  `json:"moves"`
}

// clock is a settable clock for the Service.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = fixedTime.Add(d)
}

// healthEnv is an env on the memory store with a settable clock and the
// metrics' health observer wired as cmd/dispatcher wires it.
func healthEnv(t *testing.T) (*env, *clock) {
	clk := &clock{now: fixedTime}
	m := api.NewMetrics(api.NewRegistry(), 10)
	var e *env
	e = newEnv(t,
		withAPI(func(o *api.Options) { o.Metrics = m }),
		withConfig(func(c *dispatch.Config) {
			c.Now = clk.Now
			// The observer logs where the API logs, as main wires it.
			c.Health = m.HealthObserver(slog.New(slog.NewJSONHandler(&lateWriter{e: &e}, nil)))
		}))
	return e, clk
}

// lateWriter writes to the env's log once the env exists.
type lateWriter struct{ e **env }

func (w *lateWriter) Write(p []byte) (int, error) { return (*w.e).logs.Write(p) }

// TestScaleHealth walks DESIGN §8 over HTTP: pool options, a lapse judged
// at dispatch, the tick that moves the lapsed Scale's orders, failure
// reports up to an ejection, a harmless repeated report, the heartbeat
// that brings a Scale back, and the metrics and log lines of it all.
func TestScaleHealth(t *testing.T) {
	e, clk := healthEnv(t)
	var pool struct {
		HeartbeatTimeoutMs int64  `json:"heartbeatTimeoutMs"`
		OnLapse            string `json:"onLapse"`
		MaxFails           int64  `json:"maxFails"`
		FailWindowMs       int64  `json:"failWindowMs"`
		EjectMs            int64  `json:"ejectMs"`
	}
	e.must(t, http.StatusCreated, &pool, "PUT", "/v1/pools/p", `{"heartbeatTimeoutMs": 5000, "onLapse": "reassign", "maxFails": 2}`)
	if pool.HeartbeatTimeoutMs != 5000 || pool.OnLapse != "reassign" || pool.MaxFails != 2 || pool.FailWindowMs != 10000 || pool.EjectMs != 30000 {
		t.Errorf("pool options: got %+v", pool)
	}
	for _, id := range []string{"A", "B", "C"} {
		e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p/scales/"+id, "")
	}
	e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p/batches", ordersJSON("o1", "o2", "o3"))
	onA := ordersOn(t, e, "p", "A")
	if len(onA) == 0 {
		t.Fatalf("A holds no order")
	}

	clk.set(4 * time.Second)
	var sc healthScale
	e.must(t, http.StatusOK, &sc, "POST", "/v1/pools/p/scales/B/heartbeat", `{"orderCount": 2}`)
	if sc.Health != "up" || sc.LastHeartbeatAt != "2025-03-01T12:00:04.000Z" || sc.BaseLoad != 1 {
		t.Errorf("heartbeat with orderCount 2: got %+v, want up at 12:00:04, baseLoad 1", sc)
	}
	e.must(t, http.StatusOK, nil, "POST", "/v1/pools/p/scales/C/heartbeat", "")

	// At 5 s A's lease has run out: the API shows it lapsed, and no
	// dispatch picks it, though nothing has ticked.
	clk.set(5 * time.Second)
	e.must(t, http.StatusOK, &sc, "GET", "/v1/pools/p/scales/A", "")
	if sc.Health != "lapsed" || sc.LastHeartbeatAt != "2025-03-01T12:00:00.000Z" {
		t.Errorf("A at 5s: got %+v, want lapsed, last heartbeat at registration", sc)
	}
	var b batchBody
	e.must(t, http.StatusCreated, &b, "POST", "/v1/pools/p/batches", ordersJSON("o4", "o5", "o6", "o7"))
	if strings.Contains(b.picks(), "A") {
		t.Errorf("dispatch at 5s: got %s, want no order on lapsed A", b.picks())
	}
	// The tick moves A's orders, each once.
	if _, err := e.svc.TickPool(context.Background(), "p", time.Second); err != nil {
		t.Fatal(err)
	}
	var sl struct{ Scales []healthScale }
	e.must(t, http.StatusOK, &sl, "GET", "/v1/pools/p/scales", "")
	var o movedOrder
	for _, id := range onA {
		e.must(t, http.StatusOK, &o, "GET", "/v1/pools/p/orders/"+id, "")
		if o.CompID == "A" || o.Moves != 1 {
			t.Errorf("%s after the tick: got %+v, want moved once off A", id, o)
		}
	}

	// Two reports through the API eject B; a repeat of a moved order counts
	// nothing.
	onB := ordersOn(t, e, "p", "B")
	if len(onB) < 2 {
		t.Fatalf("B holds %v, want at least 2 orders", onB)
	}
	for _, id := range onB[:2] {
		e.must(t, http.StatusOK, &o, "POST", "/v1/pools/p/orders/"+id+"/fail", `{"compId": "B", "reason": "connection refused"}`)
		if o.CompID != "C" || o.Moves == 0 {
			t.Errorf("report of %s: got %+v, want moved to C", id, o)
		}
	}
	e.must(t, http.StatusOK, &sc, "GET", "/v1/pools/p/scales/B", "")
	if sc.Health != "ejected" || sc.EjectedUntil == nil || *sc.EjectedUntil != "2025-03-01T12:00:35.000Z" || sc.Failures != 0 {
		t.Errorf("B after 2 reports: got %+v, want ejected until 12:00:35", sc)
	}
	before := e.snapshot(t, []string{"p"})
	e.must(t, http.StatusOK, &o, "POST", "/v1/pools/p/orders/"+onB[0]+"/fail", `{"compId": "B"}`)
	if o.CompID != "C" {
		t.Errorf("repeated report: got %+v, want the order as it stands on C", o)
	}
	if after := e.snapshot(t, []string{"p"}); after != before {
		t.Errorf("a repeated report changed the store:\nbefore %s\nafter  %s", before, after)
	}

	// A heartbeat brings A back.
	clk.set(6 * time.Second)
	e.must(t, http.StatusOK, &sc, "POST", "/v1/pools/p/scales/A/heartbeat", "{}")
	if sc.Health != "up" || sc.State != "active" {
		t.Errorf("A's heartbeat: got %+v, want up, active", sc)
	}
	if _, err := e.svc.TickPool(context.Background(), "p", time.Second); err != nil {
		t.Fatal(err)
	}

	m := e.scrape(t)
	wantMetric(t, m, `dispatcher_scale_health_changes_total{health="lapsed",pool="p"} 1`)
	wantMetric(t, m, `dispatcher_scale_health_changes_total{health="ejected",pool="p"} 1`)
	wantMetric(t, m, `dispatcher_scale_health_changes_total{health="up",pool="p"} 1`)
	wantMetric(t, m, `dispatcher_orders_moved_total{pool="p",reason="fail"} 2`)
	wantMetric(t, m, `dispatcher_orders_moved_total{pool="p",reason="lapse"} `+strconv.Itoa(len(onA)))
	for _, s := range sl.Scales {
		if s.CompID == "A" && s.Health != "lapsed" {
			t.Errorf("A in the list after the tick: got %s, want lapsed", s.Health)
		}
	}
	logs := e.logs.String()
	for _, want := range []string{`"msg":"scale health changed","pool":"p","compId":"A","from":"up","to":"lapsed"`,
		`"compId":"B","from":"up","to":"ejected"`, `"compId":"A","from":"lapsed","to":"up"`, `"msg":"failure report"`, `"reason":"connection refused"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line with %s", want)
		}
	}
}

// ordersOn lists the outstanding orders of a Scale.
func ordersOn(t *testing.T, e *env, pool, compID string) []string {
	t.Helper()
	return listAll(t, e, "/v1/pools/"+pool+"/scales/"+compID+"/orders", "100")
}
