package main

import (
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, defaultConfig()) {
		t.Errorf("got %+v, want %+v", c, defaultConfig())
	}
}

func TestParseConfigEnvThenFlags(t *testing.T) {
	env := envOf(map[string]string{
		"DISPATCHER_ADDR":            "127.0.0.1:9000",
		"DISPATCHER_MAX_BATCH":       "500",
		"DISPATCHER_MAX_BODY":        "1MiB",
		"DISPATCHER_ORDER_RETENTION": "2h",
		"DISPATCHER_IDEMPOTENCY_TTL": "90m",
	})
	c, err := parseConfig([]string{"-addr", "127.0.0.1:9001", "-max-body", "2048"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9001" {
		t.Errorf("addr: got %q, want the flag's 127.0.0.1:9001", c.Addr)
	}
	if c.MaxBatch != 500 {
		t.Errorf("max batch: got %d, want 500 from the environment", c.MaxBatch)
	}
	if c.MaxBody != 2048 {
		t.Errorf("max body: got %d, want 2048 from the flag", c.MaxBody)
	}
	if c.Retention != 2*time.Hour {
		t.Errorf("retention: got %s, want 2h", c.Retention)
	}
	if c.IdempotencyTTL != 90*time.Minute {
		t.Errorf("idempotency TTL: got %s, want 90m from the environment", c.IdempotencyTTL)
	}
}

func TestParseConfigCoalesce(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want bool
	}{
		{"", nil, true},
		{"false", nil, false},
		{"0", []string{"-coalesce"}, true},
		{"true", []string{"-coalesce=false"}, false},
	} {
		c, err := parseConfig(tc.args, envOf(map[string]string{"DISPATCHER_COALESCE": tc.env}), io.Discard)
		if err != nil || c.Coalesce != tc.want {
			t.Errorf("DISPATCHER_COALESCE=%q %v: got %v, %v, want %v", tc.env, tc.args, c.Coalesce, err, tc.want)
		}
	}
	c, err := parseConfig([]string{"-coalesce-calls", "3"}, envOf(map[string]string{"DISPATCHER_COALESCE_CALLS": "5"}), io.Discard)
	if err != nil || c.CoalesceCalls != 3 {
		t.Errorf("-coalesce-calls 3 over DISPATCHER_COALESCE_CALLS=5: got %d, %v", c.CoalesceCalls, err)
	}
}

func TestParseConfigTimeouts(t *testing.T) {
	env := envOf(map[string]string{
		"DISPATCHER_REQUEST_TIMEOUT":     "3s",
		"DISPATCHER_READ_HEADER_TIMEOUT": "2s",
		"DISPATCHER_READ_TIMEOUT":        "20s",
		"DISPATCHER_WRITE_TIMEOUT":       "40s",
		"DISPATCHER_METRICS_MAX_POOLS":   "7",
	})
	c, err := parseConfig([]string{"-idle-timeout", "90s", "-request-timeout", "4s"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got := []time.Duration{c.RequestTimeout, c.ReadHeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout}
	want := []time.Duration{4 * time.Second, 2 * time.Second, 20 * time.Second, 40 * time.Second, 90 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("request, read header, read, write, idle timeouts: got %v, want %v", got, want)
	}
	if c.MetricsMaxPools != 7 {
		t.Errorf("metrics max pools: got %d, want 7", c.MetricsMaxPools)
	}
}

func TestParseConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"batch not a number", map[string]string{"DISPATCHER_MAX_BATCH": "many"}, nil, "not an integer"},
		{"coalesce not a boolean", map[string]string{"DISPATCHER_COALESCE": "sometimes"}, nil, "DISPATCHER_COALESCE"},
		{"coalesce calls", map[string]string{"DISPATCHER_COALESCE_CALLS": "0"}, nil, "coalesce calls 0"},
		{"batch zero", nil, []string{"-max-batch", "0"}, "max batch 0"},
		{"body unit", map[string]string{"DISPATCHER_MAX_BODY": "4 parsecs"}, nil, "not a size"},
		{"body tiny", nil, []string{"-max-body", "10"}, "at least 1KiB"},
		{"mode", map[string]string{"DISPATCHER_REDIS_MODE": "galaxy"}, nil, "redis mode"},
		{"retention", map[string]string{"DISPATCHER_ORDER_RETENTION": "-1h"}, nil, "positive duration"},
		{"idempotency TTL", nil, []string{"-idempotency-ttl", "0s"}, "idempotency TTL 0s: want a positive duration"},
		{"idempotency TTL unit", map[string]string{"DISPATCHER_IDEMPOTENCY_TTL": "a day"}, nil, "DISPATCHER_IDEMPOTENCY_TTL"},
		{"request timeout", nil, []string{"-request-timeout", "0s"}, "request timeout 0s"},
		{"request timeout past write", map[string]string{"DISPATCHER_REQUEST_TIMEOUT": "1m"}, nil, "shorter than the write timeout"},
		{"idle timeout", map[string]string{"DISPATCHER_IDLE_TIMEOUT": "soon"}, nil, "DISPATCHER_IDLE_TIMEOUT"},
		{"read header past read", nil, []string{"-read-header-timeout", "31s"}, "at most the read timeout"},
		{"metrics pools", map[string]string{"DISPATCHER_METRICS_MAX_POOLS": "-1"}, nil, "metrics max pools -1"},
		{"stray argument", nil, []string{"serve"}, "unexpected arguments"},
		{"cluster without a URL", map[string]string{"DISPATCHER_REDIS_MODE": "cluster"}, nil, "redis mode cluster: needs DISPATCHER_REDIS_URL"},
		{"CA file without a URL", map[string]string{"DISPATCHER_REDIS_CA_FILE": "/tmp/ca.pem"}, nil, "redis TLS files: need DISPATCHER_REDIS_URL"},
		{"key file without a URL", nil, []string{"-redis-key-file", "/tmp/key.pem"}, "redis TLS files: need DISPATCHER_REDIS_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, envOf(tc.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestParseConfigListsEveryProblem: variables that do not parse, values out
// of range and a token file are refused together; a flag overrides a
// variable that does not parse.
func TestParseConfigListsEveryProblem(t *testing.T) {
	env := envOf(map[string]string{
		"DISPATCHER_MAX_BATCH":         "abc",
		"DISPATCHER_REDIS_MODE":        "bogus",
		"DISPATCHER_COALESCE_CALLS":    "0",
		"DISPATCHER_IDLE_TIMEOUT":      "soon",
		"DISPATCHER_ADMIN_TOKENS_FILE": "/nonexistent/tokens",
	})
	_, err := parseConfig(nil, env, io.Discard)
	for _, want := range []string{"DISPATCHER_MAX_BATCH", "redis mode \"bogus\"", "coalesce calls 0", "DISPATCHER_IDLE_TIMEOUT", "DISPATCHER_ADMIN_TOKENS_FILE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got error %v, want one naming %s", err, want)
		}
	}
	// A variable that does not parse leaves the default, which no range
	// check then reports.
	_, err = parseConfig(nil, envOf(map[string]string{
		"DISPATCHER_WRITE_TIMEOUT": "soon", "DISPATCHER_READ_TIMEOUT": "later", "DISPATCHER_MAX_BATCH": "abc",
		"DISPATCHER_REDIS_URL_FILE": "/nonexistent/url", "DISPATCHER_REDIS_WAIT_REPLICAS": "1",
	}), io.Discard)
	for _, madeUp := range []string{"write timeout 0s", "read timeout 0s", "max batch 0", "needs DISPATCHER_REDIS_URL"} {
		if err == nil || strings.Contains(err.Error(), madeUp) {
			t.Errorf("got error %v, want one without %q", err, madeUp)
		}
	}
	c, err := parseConfig([]string{"-max-batch", "5"}, envOf(map[string]string{"DISPATCHER_MAX_BATCH": "abc"}), io.Discard)
	if err != nil || c.MaxBatch != 5 {
		t.Errorf("-max-batch 5 over DISPATCHER_MAX_BATCH=abc: max batch %d, %v; want 5, nil", c.MaxBatch, err)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"4MiB": 4 << 20, "512KiB": 512 << 10, "1MB": 1e6, "1048576": 1 << 20, "2 GiB": 2 << 30} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q): got %d, %v; want %d", in, int64(b), err, want)
		}
	}
}

func TestParseConfigLogLevel(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want slog.Level
	}{
		{"", nil, slog.LevelInfo},
		{"warn", nil, slog.LevelWarn},
		{"ERROR", nil, slog.LevelError},
		{"error", []string{"-log-level", "debug"}, slog.LevelDebug},
	} {
		c, err := parseConfig(tc.args, envOf(map[string]string{"DISPATCHER_LOG_LEVEL": tc.env}), io.Discard)
		if err != nil || c.LogLevel != tc.want {
			t.Errorf("DISPATCHER_LOG_LEVEL=%q %v: got %v, %v, want %v", tc.env, tc.args, c.LogLevel, err, tc.want)
		}
	}
	for _, bad := range [][]string{{"-log-level", "loud"}, nil} {
		env := map[string]string{}
		if bad == nil {
			env["DISPATCHER_LOG_LEVEL"] = "verbose"
		}
		if _, err := parseConfig(bad, envOf(env), io.Discard); err == nil {
			t.Errorf("%v %v: got no error, want an unknown level", bad, env)
		}
	}
}
