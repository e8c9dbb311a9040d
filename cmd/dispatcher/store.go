package main

import (
	"fmt"
	"log/slog"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/redis"
)

// openStore returns the store the configuration names and a function that
// closes it.
func openStore(cfg config, log *slog.Logger) (dispatch.Store, func(), error) {
	if cfg.RedisURL == "" {
		log.Warn("no DISPATCHER_REDIS_URL: running on the embedded in-memory store; state lives in this process only and is lost when it stops")
		return memory.New(memory.Options{Retention: cfg.Retention}), func() {}, nil
	}
	c, err := redis.NewClient(cfg.RedisURL, cfg.RedisMode)
	if err != nil {
		// The URL may hold a password: name the mode, not the URL.
		return nil, nil, fmt.Errorf("DISPATCHER_REDIS_URL (mode %s): %w", cfg.RedisMode, err)
	}
	log.Info("store: redis", "mode", cfg.RedisMode)
	return redis.New(c, redis.Options{Retention: cfg.Retention}), func() { _ = c.Close() }, nil
}
