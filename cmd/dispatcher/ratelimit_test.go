package main

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestRateLimitSharedByReplicas runs three replicas on one redis-server
// and sends requests of one rate-limited token to all three, as fast as
// they answer, for 5 s: the requests allowed, all replicas together, are
// within 10% of the token's ratePerSec × 5 s (plus its burst), and the
// others are 429 problems with a Retry-After. The lower bound counts only
// the time the limiter had a request waiting: a pause of the senders (a
// loaded machine, the race detector) longer than the burst leaves
// allowances unused that no limiter could grant.
func TestRateLimitSharedByReplicas(t *testing.T) {
	const rate, span = 20, 5 * time.Second
	srv := redistest.Start(t)
	file := writeFile(t, tokensFile(tokenEntry("metered", tokEU, "client", `, "ratePerSec": 20`)))
	env := map[string]string{
		"DISPATCHER_REDIS_URL":    srv.URL(),
		"DISPATCHER_TOKENS_FILE":  file,
		"DISPATCHER_ADMIN_TOKENS": tokA,
	}
	var bases []string
	for range 3 {
		addr, _ := startRun(t, nil, env)
		bases = append(bases, "http://"+addr)
	}
	do(t, "PUT", bases[0]+"/v1/pools/p", "", http.StatusUnauthorized)
	if s := put(t, bases[0]+"/v1/pools/p", tokA); s != http.StatusCreated {
		t.Fatalf("PUT pool: %d", s)
	}

	var allowed, limited, other atomic.Int64
	var badProblem atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	sent := make([][]time.Duration, 9)
	for w := range 9 {
		wg.Go(func() {
			c := &http.Client{Timeout: 5 * time.Second}
			for time.Since(start) < span {
				sent[w] = append(sent[w], time.Since(start))
				req, _ := http.NewRequest("GET", bases[w%3]+"/v1/pools/p", nil)
				req.Header.Set("Authorization", "Bearer "+tokEU)
				resp, err := c.Do(req)
				if err != nil {
					other.Add(1)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					allowed.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
					var p struct{ Type string }
					if json.Unmarshal(body, &p) != nil || p.Type != "urn:dispatcher:problem:rate-limited" ||
						resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Retry-After") != "1" {
						badProblem.Store(string(body) + " Retry-After " + resp.Header.Get("Retry-After"))
					}
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	want := float64(rate)*span.Seconds() + float64(burstFor(rate))
	idle := unusedAllowance(sent, time.Second/rate*time.Duration(burstFor(rate)))
	floor := want - idle.Seconds()*rate
	got := float64(allowed.Load())
	t.Logf("allowed %d, refused %d (429), other %d over %s; limit %d/s → %.0f allowed; off by %+.1f%%; senders idle beyond the burst %s",
		allowed.Load(), limited.Load(), other.Load(), span, rate, want, 100*(got-want)/want, idle)
	if got > 1.1*want {
		t.Errorf("allowed %v requests, want at most %v + 10%%", got, want)
	}
	if got < 0.9*floor {
		t.Errorf("allowed %v requests, want at least %v − 10%% (%v less the %s the senders were idle)", got, floor, want, idle)
	}
	if limited.Load() < int64(want) {
		t.Errorf("only %d requests refused: the load did not exceed the limit enough to test it", limited.Load())
	}
	if other.Load() > 0 {
		t.Errorf("%d requests neither allowed nor refused", other.Load())
	}
	if v := badProblem.Load(); v != nil {
		t.Errorf("a 429 that is not a rate-limited problem with Retry-After 1: %v", v)
	}
}

// unusedAllowance is the time in which no request of any sender started
// for longer than burst: the gaps between consecutive starts, each less
// the burst a limiter keeps for it.
func unusedAllowance(sent [][]time.Duration, burst time.Duration) time.Duration {
	var all []time.Duration
	for _, s := range sent {
		all = append(all, s...)
	}
	slices.Sort(all)
	var idle time.Duration
	for i := 1; i < len(all); i++ {
		if gap := all[i] - all[i-1]; gap > burst {
			idle += gap - burst
		}
	}
	return idle
}

// burstFor is api's burst of a rate: a tenth of a second's requests.
func burstFor(rate int) int { return max(1, (rate+9)/10) }

// put sends a PUT without a body with token and returns the status.
func put(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("PUT", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRateLimitRedisDown stops Redis under a replica whose token has a
// rate: with DISPATCHER_RATE_LIMIT_ON_ERROR=open its requests go on
// unlimited, with closed they are answered 503. /metrics, which needs no
// store, tells the two apart.
func TestRateLimitRedisDown(t *testing.T) {
	for _, c := range []struct {
		onError string
		want    int
	}{{"open", http.StatusOK}, {"closed", http.StatusServiceUnavailable}} {
		t.Run(c.onError, func(t *testing.T) {
			srv := redistest.Start(t)
			file := writeFile(t, tokensFile(tokenEntry("scraper", tokOps, "admin", `, "ratePerSec": 1000`)))
			addr, sink := startRun(t, nil, map[string]string{
				"DISPATCHER_REDIS_URL":           srv.URL(),
				"DISPATCHER_TOKENS_FILE":         file,
				"DISPATCHER_RATE_LIMIT_ON_ERROR": c.onError,
			})
			url := "http://" + addr + "/metrics"
			if s, body := get(t, url, tokOps); s != http.StatusOK {
				t.Fatalf("with Redis up: %d %s", s, body)
			}
			srv.Stop()
			s, body := get(t, url, tokOps)
			if s != c.want {
				t.Fatalf("with Redis down: got %d, want %d; %s", s, c.want, body)
			}
			if c.want == http.StatusServiceUnavailable && !strings.Contains(body, "urn:dispatcher:problem:unavailable") {
				t.Errorf("503 body %s, want the unavailable problem", body)
			}
			rec, ok := logRecord(sink.String(), "rate limiter failed")
			if !ok || rec["token"] != "scraper" || rec["failClosed"] != (c.onError == "closed") {
				t.Errorf("the log line of the failure: %v", rec)
			}
			if c.want == http.StatusOK && !strings.Contains(body, `dispatcher_rate_limiter_errors_total{outcome="allowed"} 1`) {
				t.Errorf("the metrics do not count the failure:\n%s", grepLines(body, "rate_limiter"))
			}
		})
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
