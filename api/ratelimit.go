package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Limiter holds each rate-limited token to its rate. The API calls it once
// for every request of a token with a ratePerSec; a limiter that keeps its
// state in a store the replicas share (store/redis's) makes the limit one
// for all of them.
type Limiter interface {
	// Allow takes one request from the budget of the token named name,
	// which may make ratePerSec requests a second on average and burst
	// requests at once (GCRA: a request is allowed when it is at most
	// burst emission intervals of 1/ratePerSec ahead of its schedule). It
	// returns 0 when the request may go on, else how long until one
	// would be allowed; an error when it could not tell.
	Allow(ctx context.Context, name string, ratePerSec float64, burst int) (retryAfter time.Duration, err error)
}

// burstOf is the burst of a token: a tenth of a second's requests, at
// least one. Over any span T a token gets at most ratePerSec·T + burst
// requests, so a short burst keeps the limit close to what it says.
func burstOf(ratePerSec float64) int {
	return max(1, int(math.Ceil(ratePerSec/10)))
}

// limit holds tok to its ratePerSec: nil when the request may go on;
// errRateLimited (429, with Retry-After in seconds, rounded up) when it is
// over; when the limiter fails, nil if the API fails open, else
// dispatch.ErrUnavailable (503).
func (s *server) limit(r *http.Request, tok *Token) error {
	if tok.RatePerSec <= 0 {
		return nil
	}
	wait, err := s.limiter.Allow(r.Context(), tok.Name, tok.RatePerSec, burstOf(tok.RatePerSec))
	if err != nil {
		s.metrics.auth.limiterError(s.failClosed)
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "rate limiter failed",
			slog.String("token", tok.Name),
			slog.Bool("failClosed", s.failClosed),
			slog.String("request_id", requestIDOf(r)),
			slog.String("error", err.Error()))
		if !s.failClosed {
			return nil
		}
		infoOf(r).deny(s, tok.Name, deniedLimiterDown)
		return fmt.Errorf("%w: the rate limiter failed, and refuses requests while it does: %w", dispatch.ErrUnavailable, err)
	}
	if wait <= 0 {
		return nil
	}
	infoOf(r).deny(s, tok.Name, deniedRateLimited)
	return &rateLimitedError{name: tok.Name, rate: tok.RatePerSec, retryAfter: wait}
}

// rateLimitedError is a request over its token's rate.
type rateLimitedError struct {
	name       string
	rate       float64
	retryAfter time.Duration
}

func (e *rateLimitedError) Error() string {
	return fmt.Sprintf("%s: token %q may make %s requests a second; retry after %s",
		errRateLimited, e.name, strconv.FormatFloat(e.rate, 'g', -1, 64), e.retryAfter.Round(time.Millisecond))
}

func (e *rateLimitedError) Unwrap() error { return errRateLimited }

// retryAfterSeconds is the Retry-After of a 429: whole seconds, rounded
// up, at least 1.
func (e *rateLimitedError) retryAfterSeconds() string {
	return strconv.FormatInt(max(1, int64(math.Ceil(e.retryAfter.Seconds()))), 10)
}

// LocalLimiter is a Limiter for one process: GCRA over a map, for the
// embedded store, where one process is the whole service. Tokens that
// leave the tokens file keep their few bytes until the process stops.
type LocalLimiter struct {
	now func() time.Time
	mu  sync.Mutex
	tat map[string]time.Time // theoretical arrival time of the next request
}

// NewLocalLimiter returns a LocalLimiter on the clock now (time.Now if
// nil).
func NewLocalLimiter(now func() time.Time) *LocalLimiter {
	if now == nil {
		now = time.Now
	}
	return &LocalLimiter{now: now, tat: map[string]time.Time{}}
}

// Allow implements Limiter; it never fails.
func (l *LocalLimiter) Allow(_ context.Context, name string, ratePerSec float64, burst int) (time.Duration, error) {
	if ratePerSec <= 0 || burst < 1 {
		return 0, errors.New("api: LocalLimiter.Allow with a rate or burst that is not positive")
	}
	interval := time.Duration(float64(time.Second) / ratePerSec)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	tat := l.tat[name]
	if tat.Before(now) {
		tat = now
	}
	// The request is allowed when, once counted, the schedule is at most
	// burst intervals ahead of now.
	next := tat.Add(interval)
	if ahead := next.Sub(now) - time.Duration(burst)*interval; ahead > 0 {
		return ahead, nil
	}
	l.tat[name] = next
	return 0, nil
}
