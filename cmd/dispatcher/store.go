package main

import (
	"errors"
	"log/slog"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// openStore returns the store the configuration names and a function that
// closes it.
func openStore(cfg config, log *slog.Logger) (dispatch.Store, func(), error) {
	if cfg.RedisURL != "" {
		return nil, nil, errors.New("DISPATCHER_REDIS_URL: the Redis store is not supported yet")
	}
	log.Warn("no DISPATCHER_REDIS_URL: running on the embedded in-memory store; state lives in this process only and is lost when it stops")
	return memory.New(memory.Options{Retention: cfg.Retention}), func() {}, nil
}
