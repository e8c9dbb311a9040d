package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/store/redis"
)

// startupPingTimeout bounds the start-up check of Redis.
const startupPingTimeout = 5 * time.Second

// checkRedis pings Redis once at start-up. A Redis that refuses the
// dispatcher (a wrong user or password, a user without the rights the store
// needs, a certificate either side does not trust, or no TLS where the URL
// says rediss://) is a configuration error that waiting will not mend: it
// fails the start-up, saying so. A Redis that does not answer may be on its
// way: the service starts, says so, and /readyz answers 503 until it does.
func checkRedis(ctx context.Context, s *redis.Store, mode string, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, startupPingTimeout)
	defer cancel()
	err := s.Ping(ctx)
	switch {
	case err == nil:
		log.Info("store: redis answers")
		return nil
	case refused(err):
		// The error names no password: go-redis's never does.
		return fmt.Errorf("redis (mode %s) refuses this dispatcher: check DISPATCHER_REDIS_URL's user, password and database, DISPATCHER_REDIS_MODE and the TLS files: %w", mode, err)
	}
	log.Warn("store: redis does not answer yet; /readyz answers 503 until it does", "error", err.Error())
	return nil
}

// configReplies are the error replies of a Redis that turns this
// configuration away for good: credentials or rights refused, a database
// it does not have, cluster mode against a server without it (or the
// reverse), a server in protected mode. Other replies (loading, a replica,
// a failover, a busy script, a Sentinel that does not know the master yet)
// may pass.
var configReplies = []string{
	"WRONGPASS", "NOAUTH", "NOPERM", "DENIED",
	"ERR DB index is out of range", "ERR This instance has cluster support disabled",
	"ERR SELECT is not allowed in cluster mode",
}

// refused reports whether err is Redis turning the dispatcher away, rather
// than Redis being out of reach or not ready yet.
func refused(err error) bool {
	var re goredis.Error
	if errors.As(err, &re) {
		for _, p := range configReplies {
			if strings.HasPrefix(re.Error(), p) {
				return true
			}
		}
		return false
	}
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var op *net.OpError
	return errors.As(err, &verify) || errors.As(err, &header) ||
		// The server sent a TLS alert: it rejected our certificate, or
		// none was sent where one is required.
		(errors.As(err, &op) && op.Op == "remote error")
}
