package api_test

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
)

// TestSpecMatchesCode checks that openapi.yaml states the limits, ids,
// strategies and problem types that the code implements.
func TestSpecMatchesCode(t *testing.T) {
	doc := loadSpec(t)
	schemas := doc.Components.Schemas

	if got := schemas["Id"].Value.Pattern; got != dispatch.IDPattern.String() {
		t.Errorf("Id pattern %s, want %s", got, dispatch.IDPattern)
	}
	var strategies []string
	for _, v := range schemas["Strategy"].Value.Enum {
		strategies = append(strategies, v.(string))
	}
	var want []string
	for _, s := range dispatch.Strategies {
		want = append(want, string(s))
	}
	if !slices.Equal(strategies, want) {
		t.Errorf("Strategy enum %v, want dispatch.Strategies %v", strategies, want)
	}

	bounds := []struct {
		schema, prop string
		min, max     float64
	}{
		{"ScaleInput", "weight", 1, dispatch.MaxWeight},
		{"ScaleInput", "maxOrders", 0, dispatch.MaxOrderCount},
		{"ScaleInput", "orderCount", 0, dispatch.MaxOrderCount},
		{"PoolInput", "slowStartSeconds", 0, dispatch.MaxSlowStart.Seconds()},
		{"PoolInput", "heartbeatTimeoutMs", 0, float64(dispatch.MaxHealthDuration.Milliseconds())},
		{"PoolInput", "maxFails", 0, dispatch.MaxMaxFails},
		{"PoolInput", "failWindowMs", float64(dispatch.MinHealthDuration.Milliseconds()), float64(dispatch.MaxHealthDuration.Milliseconds())},
		{"PoolInput", "ejectMs", float64(dispatch.MinHealthDuration.Milliseconds()), float64(dispatch.MaxHealthDuration.Milliseconds())},
		{"HeartbeatInput", "orderCount", 0, dispatch.MaxOrderCount},
		{"FailInput", "reason", 0, dispatch.MaxReasonBytes},
		{"CompleteInput", "durationMs", 0, dispatch.MaxOrderCount},
		{"OrderInput", "key", 1, dispatch.MaxKeyBytes},
	}
	for _, b := range bounds {
		s := schemas[b.schema].Value.Properties[b.prop].Value
		lo, hi := s.Min, s.Max
		if s.Type.Is("string") {
			lo, hi = ptr(float64(s.MinLength)), ptr(float64(*s.MaxLength))
		}
		if lo == nil || hi == nil || *lo != b.min || *hi != b.max {
			t.Errorf("%s.%s: range %v..%v, want %v..%v", b.schema, b.prop, deref(lo), deref(hi), b.min, b.max)
		}
	}
	limit := doc.Components.Parameters["Limit"].Value.Schema.Value
	if *limit.Min != 1 || *limit.Max != dispatch.MaxLimit || limit.Default != float64(dispatch.DefaultLimit) {
		t.Errorf("limit %v..%v default %v, want 1..%d default %d", *limit.Min, *limit.Max, limit.Default, dispatch.MaxLimit, dispatch.DefaultLimit)
	}

	problem := schemas["Problem"].Value
	listed := map[string]int{}
	for slug, status := range problem.Extensions["x-problem-types"].(map[string]any) {
		listed[slug] = int(status.(float64))
	}
	if got, want := listed, api.ProblemSlugs(); !maps.Equal(got, want) {
		t.Errorf("x-problem-types\ngot  %v\nwant %v", got, want)
	}
	var enum []string
	for _, v := range problem.Properties["type"].Value.Enum {
		enum = append(enum, v.(string))
	}
	var slugs []string
	for slug, status := range api.ProblemSlugs() {
		slugs = append(slugs, problemPrefix+slug)
		if !strings.Contains(problem.Description, "| `"+slug+"` | "+strconv.Itoa(status)+" |") {
			t.Errorf("the Problem description does not list %s (%d)", slug, status)
		}
	}
	slices.Sort(enum)
	slices.Sort(slugs)
	if !slices.Equal(enum, slugs) {
		t.Errorf("Problem type enum\ngot  %v\nwant %v", enum, slugs)
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSpecCheck makes sure that the validating client of the tests fails
// on what openapi.yaml does not describe, so that nothing escapes it.
func TestSpecCheck(t *testing.T) {
	pool := `{"name":"p","strategy":"waterfill","slowStartSeconds":0,"heartbeatTimeoutMs":0,"onLapse":"hold","maxFails":0,"failWindowMs":10000,"ejectMs":30000,"scaleCount":0,"createdAt":"2025-01-02T03:04:05.678Z"}`
	cases := []struct {
		name               string
		method, path, body string
		status             int
		header             map[string]string
		answer             string
		wantErr            bool
	}{
		{"valid", "GET", "/v1/pools/p", "", 200, nil, pool, false},
		{"undocumented member", "GET", "/v1/pools/p", "", 200, nil, strings.Replace(pool, `"name"`, `"extra":1,"name"`, 1), true},
		{"missing member", "GET", "/v1/pools/p", "", 200, nil, strings.Replace(pool, `"scaleCount":0,`, "", 1), true},
		{"undocumented status", "GET", "/v1/pools/p", "", 418, nil, pool, true},
		{"wrong content type", "GET", "/v1/pools/p", "", 200, map[string]string{"Content-Type": "text/plain"}, pool, true},
		{"problem of another status", "GET", "/v1/pools/p", "", 404, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"urn:dispatcher:problem:invalid-id","title":"t","status":404,"detail":"d"}`, true},
		{"unlisted problem type", "GET", "/v1/pools/p", "", 404, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"urn:dispatcher:problem:gone","title":"t","status":404,"detail":"d"}`, true},
		{"201 without Location", "PUT", "/v1/pools/p", "", 201, nil, pool, true},
		{"204 with a body", "DELETE", "/v1/pools/p", "", 204, nil, "{}", true},
		{"invalid request accepted", "PUT", "/v1/pools/p", `{"slowStartSeconds":-1}`, 200, nil, pool, true},
		{"invalid path id accepted", "GET", "/v1/pools/-p", "", 200, nil, pool, true},
		{"unknown route answered", "GET", "/v1/nothing", "", 200, nil, pool, true},
		{"unknown route 404", "GET", "/v1/nothing", "", 404, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"urn:dispatcher:problem:not-found","title":"t","status":404,"detail":"d"}`, false},
		{"503 without Retry-After", "GET", "/readyz", "", 503, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"urn:dispatcher:problem:unavailable","title":"t","status":503,"detail":"d"}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answer := roundTripFunc(func(*http.Request) (*http.Response, error) {
				h := http.Header{"Content-Type": {"application/json"}}
				for k, v := range c.header {
					h.Set(k, v)
				}
				return &http.Response{StatusCode: c.status, Header: h, Body: io.NopCloser(strings.NewReader(c.answer))}, nil
			})
			client := &http.Client{Transport: newSpecCheck(t, answer, false)}
			req, _ := http.NewRequest(c.method, "http://dispatcher.test"+c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if gotErr := err != nil; gotErr != c.wantErr {
				t.Errorf("got error %v, want error %v", err, c.wantErr)
			}
		})
	}
}

// roundTripFunc answers requests without a server.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
