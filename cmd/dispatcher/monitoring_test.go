package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// The monitoring files of deploy/ that TestMonitoring checks.
var (
	dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "dispatcher.json")
	rulesFile     = filepath.Join("..", "..", "deploy", "prometheus", "rules.yaml")
	rulesTestFile = filepath.Join("..", "..", "deploy", "prometheus", "rules_test.yaml")
)

// fromPrometheus are the series a query may use that Prometheus makes
// itself, not /metrics.
var fromPrometheus = map[string]bool{"up": true}

// promtool returns the path of Debian's promtool (package prometheus), and
// fails the test without it: CI must not pass by checking nothing.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install it (Debian: apt-get install prometheus; .ci/run does)")
	}
	return p
}

// TestMonitoring checks the Grafana dashboard and the alerting rules of
// deploy/ against promtool and against the /metrics of a service on Redis
// after traffic: every metric name that a panel, a template variable or a
// rule uses is served.
func TestMonitoring(t *testing.T) {
	tool := promtool(t)
	t.Run("rules", func(t *testing.T) {
		for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
			out, err := exec.Command(tool, args...).CombinedOutput()
			if err != nil {
				t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})

	queries := append(dashboardQueries(t), ruleQueries(t)...)
	srv := redistest.Start(t)
	addr, _ := startRun(t, nil, map[string]string{"DISPATCHER_REDIS_URL": srv.URL()})
	base := "http://" + addr
	do(t, http.MethodPut, base+"/v1/pools/mon", `{}`, http.StatusCreated)
	for _, s := range []string{"S1", "S2", "S3"} {
		do(t, http.MethodPut, base+"/v1/pools/mon/scales/"+s, `{}`, http.StatusCreated)
	}
	do(t, http.MethodPost, base+"/v1/pools/mon/batches", `{"orders":[{"id":"o1"},{"id":"o2"},{"id":"o3"}]}`, http.StatusCreated)
	do(t, http.MethodPost, base+"/v1/pools/mon/orders/o1/complete", `{}`, http.StatusOK)
	do(t, http.MethodPost, base+"/v1/pools/mon/orders/o2/cancel", `{}`, http.StatusOK)
	do(t, http.MethodGet, base+"/v1/pools/mon/table", ``, http.StatusOK)

	// The health and move counters appear with the first change and move: a
	// pool with heartbeats whose Scale L1 holds orders and lapses, while L2
	// heartbeats and takes them over (onLapse reassign).
	do(t, http.MethodPut, base+"/v1/pools/lapse", `{"heartbeatTimeoutMs":1000,"onLapse":"reassign"}`, http.StatusCreated)
	do(t, http.MethodPut, base+"/v1/pools/lapse/scales/L1", `{}`, http.StatusCreated)
	do(t, http.MethodPost, base+"/v1/pools/lapse/batches", `{"orders":[{"id":"l1"},{"id":"l2"}]}`, http.StatusCreated)
	do(t, http.MethodPut, base+"/v1/pools/lapse/scales/L2", `{}`, http.StatusCreated)
	live := scrape(t, base)
	for deadline := time.Now().Add(15 * time.Second); ; {
		names := sampleNames(live)
		if names["dispatcher_scale_health_changes_total"] && names["dispatcher_orders_moved_total"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no health change or move 15 s after a Scale of a pool with heartbeatTimeoutMs 1000 stopped its heartbeats:\n%s", live)
		}
		do(t, http.MethodPost, base+"/v1/pools/lapse/scales/L2/heartbeat", `{}`, http.StatusOK)
		time.Sleep(250 * time.Millisecond)
		live = scrape(t, base)
	}

	// The Redis error counter appears with the first failure: stop Redis
	// and let a request fail.
	srv.Stop()
	do(t, http.MethodGet, base+"/v1/pools/mon", ``, http.StatusServiceUnavailable)
	failing := scrape(t, base)
	srv.Restart()

	for name, text := range map[string]string{"after traffic": live, "with Redis down": failing} {
		cmd := exec.Command(tool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on /metrics %s: %v\n%s", name, err, out)
		}
	}

	served := sampleNames(live)
	for n := range sampleNames(failing) {
		served[n] = true
	}
	used := 0
	for _, q := range queries {
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric name found in %q", q.where, q.expr)
		}
		for _, n := range names {
			used++
			if !served[n] && !fromPrometheus[n] {
				t.Errorf("%s uses %s, which /metrics does not serve after traffic", q.where, n)
			}
		}
	}
	if len(queries) < 20 || used < 20 {
		t.Errorf("found %d queries using %d metric names: the files were not read whole", len(queries), used)
	}
}

// query is a PromQL expression and where it was found.
type query struct{ where, expr string }

// labelValues is a Grafana template query: label_values(metric, label).
var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,`)

// dashboardQueries returns every expr of the dashboard, nested panels
// included, and the metric of each template variable's query.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var qs []query
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				where = fmt.Sprintf("panel %q", title)
			}
			if e, ok := v["expr"].(string); ok {
				qs = append(qs, query{where, e})
			}
			for _, c := range v {
				walk(where, c)
			}
		case []any:
			for _, c := range v {
				walk(where, c)
			}
		}
	}
	ids := map[float64]bool{}
	for _, raw := range d.Panels {
		var p map[string]any
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		id, _ := p["id"].(float64)
		if id == 0 || ids[id] {
			t.Errorf("panel %v: id %v missing or repeated", p["title"], p["id"])
		}
		ids[id] = true
		walk("", p)
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		text, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, text)
			continue
		}
		qs = append(qs, query{"variable " + v.Name, m[1]})
	}
	return qs
}

// ruleQueries returns the expr of every rule of rules.yaml.
func ruleQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var qs []query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{"rule " + r.Alert + r.Record, r.Expr})
		}
	}
	return qs
}

// scrape returns the text of GET /metrics.
func scrape(t *testing.T, base string) string {
	t.Helper()
	code, body := get(t, base+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: got %d, want 200", code)
	}
	return body
}

// sampleNames returns the names of the samples of a text exposition.
func sampleNames(text string) map[string]bool {
	names := map[string]bool{}
	for line := range strings.Lines(text) {
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end > 0 {
			names[line[:end]] = true
		}
	}
	return names
}

// The parts of PromQL that metricNames strips before it reads names.
var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promToken    = regexp.MustCompile(`[0-9][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords = map[string]bool{
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true,
		"sum": true, "min": true, "max": true, "avg": true, "count": true, "group": true, "stddev": true,
		"stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true,
	}
)

// metricNames returns the metric names a PromQL expression selects, sorted:
// the identifiers left once strings, ranges, label matchers and grouping
// clauses are gone, less functions (a name before "("), keywords and
// numbers.
func metricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promRange.ReplaceAllString(s, "")
	s = promMatchers.ReplaceAllString(s, "")
	s = promGrouping.ReplaceAllString(s, "")
	var names []string
	for _, m := range promToken.FindAllStringSubmatch(s, -1) {
		tok := m[0]
		if m[1] != "" || tok[0] >= '0' && tok[0] <= '9' || promKeywords[strings.ToLower(tok)] {
			continue
		}
		names = append(names, tok)
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`up{job="dispatcher"} == 0`, "up"},
		{`sum by (code) (rate(dispatcher_redis_errors_total{code!="canceled"}[5m])) > 0`, "dispatcher_redis_errors_total"},
		{`histogram_quantile(0.99, sum by (le, script) (rate(a_bucket[$__rate_interval])))`, "a_bucket"},
		{`sum(rate(x{status=~"5.."}[5m])) / sum(rate(x[5m])) > 0.01`, "x"},
		{`a_sum / on (pool) group_left(strategy) b_count offset 5m`, "a_sum b_count"},
		{`max by (pool) (deriv(g{pool=~"$pool"}[1h])) > 1e3`, "g"},
		{`rate(x[5m])`, "x"},
	} {
		if got := strings.Join(metricNames(c.expr), " "); got != c.want {
			t.Errorf("metricNames(%q): got %q, want %q", c.expr, got, c.want)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("# HELP a x\n# TYPE a counter\na_total{x=\"1\"} 1\nb 2\n")
	if got := sampleNames(buf.String()); len(got) != 2 || !got["a_total"] || !got["b"] {
		t.Errorf("sampleNames: got %v, want a_total and b", got)
	}
}
