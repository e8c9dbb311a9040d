package redis

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
)

// LimiterKeyPrefix begins the key of each rate-limited token, after the
// "rate:" that redis_rate puts before every key: rate:dispatch:token:NAME,
// one key per token, so the limiter runs on a Cluster as on one server
// (an ACL rule needs ~rate:dispatch:*).
const LimiterKeyPrefix = "dispatch:token:"

// Limiter holds tokens to their rates with GCRA in Redis (redis_rate's
// script, on Redis's clock): every replica that uses the same Redis shares
// each token's one limit. It implements api.Limiter.
type Limiter struct {
	l *redis_rate.Limiter
}

// NewLimiter returns a Limiter on c (a client of NewClient: a single
// server, a Sentinel or a Cluster).
func NewLimiter(c goredis.UniversalClient) *Limiter {
	return &Limiter{l: redis_rate.NewLimiter(c)}
}

// Allow takes one request from the budget of the token named name: 0 when
// it may go on, else how long until one would be allowed. ErrUnavailable
// when Redis does not answer.
func (l *Limiter) Allow(ctx context.Context, name string, ratePerSec float64, burst int) (time.Duration, error) {
	// One request per emission interval: redis_rate's rate is an integer
	// per period, and a period of 1/ratePerSec seconds keeps fractional
	// rates (0.5 a second) exact.
	limit := redis_rate.Limit{Rate: 1, Burst: burst, Period: time.Duration(float64(time.Second) / ratePerSec)}
	res, err := l.l.Allow(ctx, LimiterKeyPrefix+name, limit)
	if err != nil {
		return 0, unavailable(err)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}
