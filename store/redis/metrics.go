package redis

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
)

// Metrics is the Redis store's Prometheus instrumentation: how long each
// script takes and which calls fail, observed by a go-redis hook on the
// client (Metrics.Hook), so the store's code is unchanged by it.
//
// Labels are bounded: script is the name of one of the library's functions
// (functions.go) or "unknown"; call is a script name, a command of the pool list or the
// readiness check, "pipeline" or "other"; code is one of the codes of
// errorCode.
type Metrics struct {
	scripts *prometheus.HistogramVec
	errors  *prometheus.CounterVec
	names   map[string]string // function's registered name → name
	// observers holds the scripts histogram's series by script name
	// (string → prometheus.Observer) once a call has made them, so that
	// the next call does not hash its label.
	observers sync.Map
}

// NewMetrics registers the store's collectors on reg and returns them. It
// panics if reg is nil or already holds them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		panic("redis: NewMetrics with a nil registry")
	}
	m := &Metrics{
		scripts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dispatcher_redis_script_duration_seconds",
			Help: "Time from sending a store script to Redis to its answer, retries and redirects included, by script.",
			// From a read on a near Redis to a dispatch of 10,000 orders.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"script"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_redis_errors_total",
			Help: "Redis calls of the store that failed (domain answers such as an unknown pool excluded), by call and error code.",
		}, []string{"call", "code"}),
		names: make(map[string]string, len(lib.fns)),
	}
	for _, fn := range lib.fns {
		m.names[fn.fcall] = fn.name
	}
	for _, c := range []prometheus.Collector{m.scripts, m.errors} {
		if err := reg.Register(c); err != nil {
			panic("redis: NewMetrics: " + err.Error())
		}
	}
	return m
}

// Hook returns the go-redis hook that feeds m. Give it to NewClient with
// WithHook, so that it sees each call once, the breaker's refusals
// included, and on a Cluster with its redirects and retries; AddHook on
// another client puts it below that client's hooks.
func (m *Metrics) Hook() goredis.Hook { return metricsHook{m} }

type metricsHook struct{ m *Metrics }

func (metricsHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h metricsHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if connectionSetup(cmd.Name()) {
			return next(ctx, cmd)
		}
		start := time.Now()
		err := next(ctx, cmd)
		if err == nil {
			err = cmd.Err()
		}
		h.m.observe(cmd, time.Since(start), err)
		return err
	}
}

func (h metricsHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		// go-redis sets the error of each command, a failed connection's
		// on all of them: count the first that is the store's.
		for _, c := range cmds {
			if connectionSetup(c.Name()) {
				continue
			}
			if code := errorCode(c.Err()); code != "" {
				h.m.errors.WithLabelValues("pipeline", code).Inc()
				break
			}
		}
		return err
	}
}

// connectionSetup reports whether a command is one go-redis sends to set up
// a connection, through the hooks too. Their failures are its business: it
// goes on without CLIENT SETINFO on a Redis older than 7.2, or without the
// CLIENT commands an ACL user may not run.
func connectionSetup(name string) bool {
	switch name {
	case "hello", "auth", "client", "select", "readonly":
		return true
	}
	return false
}

// observe records one call: a script's duration, a failure's code.
func (m *Metrics) observe(cmd goredis.Cmder, d time.Duration, err error) {
	if isNoScript(err) || isNoFunction(err) {
		// EVALSHA before the script is cached, FCALL before the library
		// is loaded: the call that follows is the one that counts.
		return
	}
	if cmd.Name() == "function" && isLibraryLoaded(err) {
		// another replica loaded the library first: what was wanted
		return
	}
	call := m.scriptName(cmd)
	if call != "" {
		o, ok := m.observers.Load(call)
		if !ok {
			o, _ = m.observers.LoadOrStore(call, m.scripts.WithLabelValues(call))
		}
		o.(prometheus.Observer).Observe(d.Seconds())
	} else {
		call = commandLabel(cmd.Name())
	}
	if code := errorCode(err); code != "" {
		m.errors.WithLabelValues(call, code).Inc()
	}
}

// scriptName returns the name of the script cmd runs, "unknown" for a
// script the store does not have, and "" if cmd runs none.
func (m *Metrics) scriptName(cmd goredis.Cmder) string {
	args := cmd.Args()
	if len(args) < 2 {
		return ""
	}
	switch cmd.Name() {
	case "fcall", "fcall_ro":
		fn, _ := args[1].(string)
		if name, ok := m.names[fn]; ok {
			return name
		}
		return "unknown"
	case "evalsha", "evalsha_ro", "eval", "eval_ro":
		return "unknown"
	}
	return ""
}

// commandLabel bounds the call label of a command that is not a script:
// the store sends only these.
func commandLabel(name string) string {
	switch name {
	case "zadd", "zrem", "zrange", "zcard", "exists", "ping", "wait", "set":
		return name
	}
	return "other"
}

// The code label's values besides the first word of a Redis error reply
// (those of transientPrefixes, and ERR).
const (
	codeTimeout      = "timeout"       // no answer in time: a hung or far Redis
	codeNetwork      = "network"       // no connection, or it broke
	codePoolTimeout  = "pool_timeout"  // every connection busy for PoolTimeout
	codeNotAnswering = "not_answering" // held back by the breaker (breaker.go)
	codeDeadline     = "deadline"      // the request's own deadline passed
	codeCanceled     = "canceled"      // the caller went away
	codeOther        = "other"
)

// errorCode classifies err for the code label; "" for no failure: nil,
// redis.Nil and the store's domain answers ("DISPATCH …").
func errorCode(err error) string {
	switch {
	case err == nil, errors.Is(err, goredis.Nil):
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return codeDeadline
	case errors.Is(err, context.Canceled):
		return codeCanceled
	case errors.Is(err, goredis.ErrPoolTimeout):
		return codePoolTimeout
	case errors.Is(err, ErrNotAnswering), errors.Is(err, ErrHeldBack):
		return codeNotAnswering
	}
	var re goredis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		if strings.HasPrefix(msg, "DISPATCH ") {
			return ""
		}
		word, _, _ := strings.Cut(msg, " ")
		for _, p := range transientPrefixes {
			if p == word {
				return word
			}
		}
		if word == "ERR" {
			return word
		}
		return codeOther
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return codeTimeout
	}
	return codeNetwork
}

func isNoScript(err error) bool {
	msg, ok := replyText(err)
	return ok && strings.HasPrefix(msg, "NOSCRIPT")
}
