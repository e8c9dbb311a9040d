package client

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestBackoffIsCappedAndJittered(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
		want *= time.Millisecond
		lo, hi := want, time.Duration(0)
		for range 200 {
			d := p.backoff(attempt)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < want/2 || hi > want || lo == hi {
			t.Errorf("attempt %d: waits in [%v, %v], want spread within [%v, %v]", attempt, lo, hi, want/2, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		in       string
		min, max time.Duration
	}{
		{"", 0, 0},
		{"3", 3 * time.Second, 3 * time.Second},
		{"0", 0, 0},
		{"-1", 0, 0},
		{"3x", 0, 0},
		{future, 85 * time.Second, 90 * time.Second},
		{"Mon, 01 Jan 2001 00:00:00 GMT", 0, 0},
	} {
		got := retryAfter(http.Header{"Retry-After": {c.in}})
		if got < c.min || got > c.max {
			t.Errorf("Retry-After %q: got %v, want %v … %v", c.in, got, c.min, c.max)
		}
	}
}

func TestErrorIs(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &Error{Type: ProblemPoolNotFound, Status: 404, Title: "Pool not found", Detail: "no pool eu"})
	if !errors.Is(err, ErrPoolNotFound) || errors.Is(err, ErrScaleNotFound) {
		t.Error("errors.Is by type: got the wrong answer")
	}
	if !errors.Is(err, &Error{Status: 404}) || errors.Is(err, &Error{Status: 409}) {
		t.Error("errors.Is by status: got the wrong answer")
	}
	if got, want := err.Error(), "wrapped: dispatcher: 404 Pool not found: no pool eu"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	plain := newError(502, http.Header{}, []byte("<html>bad gateway</html>"), nil)
	if plain.Type != "" || plain.Title != "Bad Gateway" || plain.Detail != "<html>bad gateway</html>" {
		t.Errorf("a non-problem 502: %+v", plain)
	}
}

func TestRetryable(t *testing.T) {
	transport := errors.New("connection reset")
	for _, c := range []struct {
		err  error
		mode retryMode
		want bool
	}{
		{transport, retryAll, true},
		{transport, retryRefused, false},
		{&Error{Status: 429}, retryRefused, true},
		{&Error{Status: 503, Type: ProblemUnavailable}, retryRefused, true},
		{&Error{Status: 503, Type: ProblemOutcomeUnknown}, retryAll, true},
		{&Error{Status: 503, Type: ProblemOutcomeUnknown}, retryRefused, false},
		{&Error{Status: 503, Type: ProblemNotReplicated}, retryAll, true},
		{&Error{Status: 503, Type: ProblemNotReplicated}, retryRefused, false},
		{&Error{Status: 503, Type: ProblemStoreFull}, retryRefused, true},
		{&Error{Status: 503, Type: ProblemStoreFull, BatchID: "b1"}, retryRefused, false},
		{&Error{Status: 503, Type: ProblemStoreFull, BatchID: "b1"}, retryAll, true},
		{&Error{Status: 409, Type: ProblemOrderExists}, retryAll, false},
		{&Error{Status: 500, Type: ProblemInternal}, retryAll, false},
	} {
		if got := retryable(c.err, c.mode); got != c.want {
			t.Errorf("retryable(%v, %d) = %v, want %v", c.err, c.mode, got, c.want)
		}
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://", "://"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q): no error", u)
		}
	}
	c, err := New("http://127.0.0.1:8080/base/")
	if err != nil || c.base.String() != "http://127.0.0.1:8080/base" {
		t.Errorf("New with a path: %v, %v", c, err)
	}
}

func TestNewIdempotencyKey(t *testing.T) {
	a, b := NewIdempotencyKey(), NewIdempotencyKey()
	if a == b || len(a) != 32 {
		t.Errorf("keys %q, %q: want two different 32-character keys", a, b)
	}
}
