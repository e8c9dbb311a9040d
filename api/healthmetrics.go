package api

import (
	"context"
	"log/slog"

	"github.com/dispatcher/dispatcher/dispatch"
)

// HealthObserver returns the dispatch.HealthObserver that counts health
// changes and moved orders in m and writes a log line for each change (and
// for each batch of moved orders) to log.
func (m *Metrics) HealthObserver(log *slog.Logger) dispatch.HealthObserver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return healthObserver{m: m, log: log}
}

type healthObserver struct {
	m   *Metrics
	log *slog.Logger
}

// HealthChanged counts the change and logs it: a Scale that is no longer
// up at warning level, one that is up again at info.
func (o healthObserver) HealthChanged(c dispatch.HealthChange) {
	o.m.health.WithLabelValues(o.m.PoolLabel(c.Pool), string(c.To)).Inc()
	level := slog.LevelWarn
	if c.To == dispatch.Up {
		level = slog.LevelInfo
	}
	o.log.Log(context.Background(), level, "scale health changed", "pool", c.Pool, "compId", c.CompID,
		"from", string(c.From), "to", string(c.To), "at", formatTime(c.At))
}

// OrdersMoved counts n moved orders and logs them.
func (o healthObserver) OrdersMoved(pool string, reason dispatch.MoveReason, n int) {
	o.m.moved.WithLabelValues(o.m.PoolLabel(pool), string(reason)).Add(float64(n))
	o.log.Info("orders moved", "pool", pool, "reason", string(reason), "orders", n)
}

// ChangesDropped counts changes the journal dropped and says so.
func (o healthObserver) ChangesDropped(pool string, n int) {
	o.m.dropped.WithLabelValues(o.m.PoolLabel(pool)).Add(float64(n))
	o.log.Warn("scale health changes dropped unreported", "pool", pool, "changes", n)
}
