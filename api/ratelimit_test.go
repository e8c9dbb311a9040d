package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/api"
)

const meteredToken = "metered-token-0123456789abcdef"

// withMetered secures the server with the tenants' tokens and "metered",
// a client token of 1 request a second, held by limiter.
func withMetered(t testing.TB, limiter api.Limiter, failClosed bool) envOption {
	tokens := append(tenantTokens(), api.Token{Name: "metered", SHA256: sha256.Sum256([]byte(meteredToken)), Role: api.RoleClient, RatePerSec: 1})
	set, err := api.NewTokenSet(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return withAPI(func(o *api.Options) {
		o.AdminTokens = []string{adminToken}
		o.Tokens = set
		o.Limiter = limiter
		o.RateLimitFailClosed = failClosed
	})
}

// TestRateLimited: beyond its rate a token gets 429 rate-limited with a
// Retry-After; other tokens are not held back.
func TestRateLimited(t *testing.T) {
	e := newEnv(t, withMetered(t, nil, false))
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(meteredToken)...)
	resp := e.must(t, http.StatusTooManyRequests, nil, "GET", "/v1/pools", "", bearer(meteredToken)...)
	if p := resp.problem(t); p.Type != problemPrefix+"rate-limited" || !strings.Contains(p.Detail, `token "metered" may make 1 requests a second`) {
		t.Errorf("got %s", resp.body)
	}
	if got := resp.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
	for range 5 {
		e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(euClient)...)
	}
}

// failingLimiter fails every call.
type failingLimiter struct{}

func (failingLimiter) Allow(context.Context, string, float64, int) (time.Duration, error) {
	return 0, errors.New("limiter store unreachable")
}

// TestRateLimiterFails: a limiter that fails lets requests through when
// the API fails open and answers 503 when it fails closed; either way the
// log says so, naming the token.
func TestRateLimiterFails(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprint("closed=", closed), func(t *testing.T) {
			e := newEnv(t, withMetered(t, failingLimiter{}, closed))
			want := http.StatusOK
			if closed {
				want = http.StatusServiceUnavailable
			}
			for range 3 {
				resp := e.must(t, want, nil, "GET", "/v1/pools", "", bearer(meteredToken)...)
				if closed && resp.header.Get("Retry-After") != "1" {
					t.Errorf("503 without Retry-After")
				}
			}
			e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(euClient)...) // no rate: no limiter call
			logs := e.logs.String()
			if strings.Count(logs, `"msg":"rate limiter failed","token":"metered"`) != 3 || !strings.Contains(logs, "limiter store unreachable") {
				t.Errorf("the log does not report the failures:\n%s", logs)
			}
		})
	}
}

// TestLocalLimiter: over any span the limiter allows rate × span + burst
// requests, and says how long until the next.
func TestLocalLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := api.NewLocalLimiter(func() time.Time { return now })
	allowed := 0
	var lastWait time.Duration
	// 50 requests a second, burst 5, offered every millisecond for 10 s.
	for range 10_001 { // 0 to 10 s, both included
		wait, err := l.Allow(context.Background(), "t", 50, 5)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			allowed++
		} else {
			lastWait = wait
		}
		now = now.Add(time.Millisecond)
	}
	if allowed != 50*10+5 {
		t.Errorf("allowed %d in [0, 10 s] at 50/s with burst 5, want 505", allowed)
	}
	if lastWait <= 0 || lastWait > 20*time.Millisecond {
		t.Errorf("a refused request waits %s, want (0, 20ms]", lastWait)
	}
	if wait, _ := l.Allow(context.Background(), "other", 50, 5); wait != 0 {
		t.Errorf("another token is held back: %s", wait)
	}
	if _, err := l.Allow(context.Background(), "t", 0, 1); err == nil {
		t.Error("a rate of 0: got no error")
	}
}

// TestTokenNamesInLogsAndMetrics drives a token through every outcome and
// checks that the access log and the metrics name the token by its name,
// with the reason of each refusal, and never show a token or a digest.
func TestTokenNamesInLogsAndMetrics(t *testing.T) {
	e := newEnv(t, withMetered(t, nil, false))
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/eu-1", "", bearer(adminToken)...)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/us-1", "", bearer(adminToken)...)
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools/eu-1", "", bearer(euClient)...)
	e.must(t, http.StatusNotFound, nil, "GET", "/v1/pools/us-1", "", bearer(euClient)...)
	e.must(t, http.StatusForbidden, nil, "DELETE", "/v1/pools/eu-1", "", bearer(euClient)...)
	e.must(t, http.StatusForbidden, nil, "GET", "/metrics", "", bearer(euAdmin)...)
	e.must(t, http.StatusUnauthorized, nil, "GET", "/v1/pools", "", bearer(unknownToken)...)
	e.must(t, http.StatusOK, nil, "GET", "/v1/pools", "", bearer(meteredToken)...)
	e.must(t, http.StatusTooManyRequests, nil, "GET", "/v1/pools", "", bearer(meteredToken)...)
	metrics := string(e.must(t, http.StatusOK, nil, "GET", "/metrics", "", bearer(adminToken)...).body)

	logs := e.logs.String()
	for _, want := range []string{
		`"route":"/v1/pools/{pool}","status":200,`,
		`"status":404,"duration"`, `"token":"eu-orders","denied":"hidden-pool"`,
		`"status":403,"duration"`, `"token":"eu-orders","denied":"forbidden"`,
		`"token":"eu-ops","denied":"forbidden"`,
		`"status":401,"duration"`, `"denied":"unauthorized"`,
		`"token":"metered","denied":"rate-limited"`,
		`"token":"env:admin:1"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
	for _, want := range []string{
		`dispatcher_token_requests_total{token="eu-orders"} 3`,
		`dispatcher_token_requests_total{token="metered"} 2`,
		`dispatcher_token_denials_total{reason="hidden-pool",token="eu-orders"} 1`,
		`dispatcher_token_denials_total{reason="forbidden",token="eu-orders"} 1`,
		`dispatcher_token_denials_total{reason="forbidden",token="eu-ops"} 1`,
		`dispatcher_token_denials_total{reason="unauthorized",token=""} 1`,
		`dispatcher_token_denials_total{reason="rate-limited",token="metered"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("the metrics lack %s:\n%s", want, grep(metrics, "dispatcher_token_"))
		}
	}
	for _, secret := range []string{euClient, euAdmin, meteredToken, adminToken, unknownToken} {
		d := sha256.Sum256([]byte(secret))
		for _, s := range []string{secret, hex.EncodeToString(d[:]), string(d[:])} {
			if strings.Contains(logs, s) || strings.Contains(metrics, s) {
				t.Errorf("the log or the metrics show a token or its digest (%.8s…)", secret)
			}
		}
	}
}

func grep(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
