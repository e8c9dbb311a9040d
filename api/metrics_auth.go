package api

import (
	"github.com/prometheus/client_golang/prometheus"
)

// authMetrics counts requests by the name of their token, never by the
// token or its digest. The token label has a bounded set of values: the
// names of the configured tokens ("" for a request without a known one).
type authMetrics struct {
	requests      *prometheus.CounterVec
	denials       *prometheus.CounterVec
	limiterErrors *prometheus.CounterVec
}

func newAuthMetrics() *authMetrics {
	return &authMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_token_requests_total",
			Help: "Requests that presented a known token, by the token's name.",
		}, []string{"token"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_token_denials_total",
			Help: "Requests refused by authentication, authorisation or rate limit, by the token's name (empty: no known token) " +
				"and reason: unauthorized (401), forbidden (403), hidden-pool (404), rate-limited (429), limiter-down (503).",
		}, []string{"token", "reason"}),
		limiterErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dispatcher_rate_limiter_errors_total",
			Help: "Rate limiter calls that failed, by what the request got: allowed (fail open) or refused (fail closed).",
		}, []string{"outcome"}),
	}
}

func (m *authMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.denials, m.limiterErrors}
}

func (m *authMetrics) tokenRequest(name string) { m.requests.WithLabelValues(name).Inc() }

func (m *authMetrics) denied(name, reason string) { m.denials.WithLabelValues(name, reason).Inc() }

func (m *authMetrics) limiterError(failClosed bool) {
	outcome := "allowed"
	if failClosed {
		outcome = "refused"
	}
	m.limiterErrors.WithLabelValues(outcome).Inc()
}
