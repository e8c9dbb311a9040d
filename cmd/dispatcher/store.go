package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
)

// openStore returns the store the configuration names, the rate limiter
// that goes with it (one shared through Redis by all replicas, or one for
// this process on the embedded store) and a function that closes them. A
// Redis store reports to metrics: its scripts' latencies, its failed calls
// and its pools' outstanding orders. It fails if Redis refuses the
// dispatcher (see checkRedis).
func openStore(ctx context.Context, cfg config, log *slog.Logger, metrics *api.Metrics) (dispatch.Store, api.Limiter, func(), error) {
	if cfg.RedisURL == "" {
		log.Warn("no DISPATCHER_REDIS_URL: running on the embedded in-memory store; state lives in this process only and is lost when it stops")
		return memory.New(memory.Options{Retention: cfg.Retention}), api.NewLocalLimiter(nil), func() {}, nil
	}
	// The metrics hook goes above the breaker, so that commands the breaker
	// holds back count as errors too.
	c, err := redis.NewClient(cfg.RedisURL, cfg.RedisMode,
		redis.WithTLSFiles(cfg.RedisCAFile, cfg.RedisCertFile, cfg.RedisKeyFile),
		redis.WithHook(redis.NewMetrics(metrics.Registry()).Hook()))
	if err != nil {
		// The URL may hold a password: name the mode, not the URL.
		return nil, nil, nil, fmt.Errorf("%w (DISPATCHER_REDIS_MODE %s)", err, cfg.RedisMode)
	}
	log.Info("store: redis", "mode", cfg.RedisMode, "waitReplicas", cfg.RedisWaitReplicas, "waitTimeout", cfg.RedisWaitTimeout.String())
	opts := redis.Options{Retention: cfg.Retention, WaitReplicas: cfg.RedisWaitReplicas, WaitTimeout: cfg.RedisWaitTimeout}
	store := redis.New(c, opts)
	metrics.Registry().MustRegister(store.OutstandingCollector(metrics.PoolLabel, cfg.MetricsMaxPools))
	if err := checkRedis(ctx, store, cfg.RedisMode, log); err != nil {
		_ = c.Close()
		return nil, nil, nil, err
	}
	return store, redis.NewLimiter(c), func() { _ = c.Close() }, nil
}
