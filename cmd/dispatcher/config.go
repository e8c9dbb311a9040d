package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
)

// config is everything the service reads at start-up: environment variables,
// each overridden by the flag of the same meaning.
type config struct {
	Addr      string
	RedisURL  string
	RedisMode string
	MaxBatch  int
	MaxBody   int64
	Retention time.Duration
	// IdempotencyTTL is how long an Idempotency-Key and its batch are kept
	// for replays (dispatch.Config.IdempotencyTTL).
	IdempotencyTTL time.Duration
	// ShutdownTimeout bounds how long in-flight requests may drain.
	ShutdownTimeout time.Duration
	// RequestTimeout bounds each request's store calls (api.Options).
	RequestTimeout time.Duration
	// The http.Server's timeouts: reading the headers, reading the whole
	// request, writing the response, and keeping an idle connection.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// AdminTokens and ClientTokens are the bearer tokens of the two roles;
	// none at all runs the API open. They print as their count only.
	AdminTokens, ClientTokens tokenList
	// TokensFile is DISPATCHER_TOKENS_FILE: tokens by digest, with names,
	// roles, pool patterns and rates (DESIGN §11), loaded into FileTokens
	// at start-up and again on SIGHUP and whenever its content changes,
	// which is checked every TokensCheckInterval.
	TokensFile          string
	FileTokens          fileTokens
	TokensCheckInterval time.Duration
	// FileTokensSum is the digest of the tokens file as loaded.
	FileTokensSum [32]byte
	// RateLimitOnError is what a request of a rate-limited token gets when
	// the limiter fails (Redis unreachable): "open" lets it through
	// unlimited, "closed" answers 503.
	RateLimitOnError string
	// MetricsMaxPools caps the distinct pool label values of the metrics.
	MetricsMaxPools int
	// MaxWatchers caps the open watch streams (GET …/watch) of a replica.
	MaxWatchers int
	// RedisWaitReplicas, if positive, is how many Redis replicas must
	// acknowledge (WAIT) what an answer rests on, every write's and every
	// read's, before it is given; fewer within RedisWaitTimeout answer 503
	// not-replicated (a batch's with its batchId).
	RedisWaitReplicas int
	RedisWaitTimeout  time.Duration
	// RedisCAFile, RedisCertFile and RedisKeyFile are PEM files for a
	// rediss:// URL: the CA to trust instead of the system's, and a client
	// certificate (see redis.WithTLSFiles).
	RedisCAFile, RedisCertFile, RedisKeyFile string
	// DebugAddr, if set, serves net/http/pprof on a listener of its own
	// (debug.go); empty, the default, serves no profiles at all.
	DebugAddr string
	// Coalesce merges the concurrent batches of one pool into shared Redis
	// script calls (dispatch.Config.NoCoalesce unset). On by default.
	Coalesce bool
	// CoalesceCalls bounds the Redis calls of one pool in flight per
	// replica when coalescing (dispatch.Config.CoalesceCalls).
	CoalesceCalls int
	// LogLevel is the least level logged: debug, info (the default, one
	// line per request), warn or error.
	LogLevel slog.Level
}

// maxWaitReplicas bounds DISPATCHER_REDIS_WAIT_REPLICAS: far more replicas
// than any deployment runs, so a typo is caught rather than waited for.
const maxWaitReplicas = 100

// maxHeaderBytes limits the request line and headers; the http.Server
// answers a request over it with 431 itself, before the API sees it.
const maxHeaderBytes = 64 << 10

func defaultConfig() config {
	return config{
		Addr:                ":8080",
		RedisMode:           "single",
		MaxBatch:            10000,
		MaxBody:             4 << 20,
		Retention:           24 * time.Hour,
		IdempotencyTTL:      dispatch.DefaultIdempotencyTTL,
		ShutdownTimeout:     20 * time.Second,
		RequestTimeout:      10 * time.Second,
		ReadHeaderTimeout:   5 * time.Second,
		ReadTimeout:         30 * time.Second,
		WriteTimeout:        60 * time.Second,
		IdleTimeout:         120 * time.Second,
		MetricsMaxPools:     100,
		MaxWatchers:         1000,
		TokensCheckInterval: time.Second,
		RateLimitOnError:    "open",
		RedisWaitTimeout:    redis.DefaultWaitTimeout,
		Coalesce:            true,
		CoalesceCalls:       dispatch.DefaultCoalesceCalls,
	}
}

// parseConfig reads the environment through getenv, then the flags in args,
// then the token files they name.
//
// Tokens have no flags of their own, only their files do: a command line
// is visible to every user of the machine.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet("dispatcher", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  dispatcher [flags]             serve the API (each flag also reads its DISPATCHER_ variable)
  dispatcher probe [flags]       check a running service's health (dispatcher probe -h)
  dispatcher simulate [flags]    compare the strategies on one workload (dispatcher simulate -h)
  dispatcher -version            print the version, the VCS revision and the Go version
  dispatcher token -name NAME    make a token and its line for DISPATCHER_TOKENS_FILE (dispatcher token -h)

Flags:
`)
		fs.PrintDefaults()
	}
	env := func(name string) string { return getenv("DISPATCHER_" + name) }
	// envErrs holds the variables that did not parse, by the name of their
	// flag: a flag given overrides its variable, and its error.
	envErrs := map[string]error{}
	// fromEnv sets *p from DISPATCHER_<envName>, when set, through parse.
	fromEnv := func(flagName, envName string, parse func(string) error) {
		if v := env(envName); v != "" {
			if err := parse(v); err != nil {
				envErrs[flagName] = fmt.Errorf("DISPATCHER_%s: %w", envName, err)
			}
		}
	}
	usageOf := func(usage, envName string) string { return usage + " (env DISPATCHER_" + envName + ")" }
	str := func(p *string, flagName, envName, usage string) {
		fromEnv(flagName, envName, func(v string) error { *p = v; return nil })
		fs.StringVar(p, flagName, *p, usageOf(usage, envName))
	}
	num := func(p *int, flagName, envName, usage string) {
		fromEnv(flagName, envName, func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			*p = n
			return nil
		})
		fs.IntVar(p, flagName, *p, usageOf(usage, envName))
	}
	dur := func(p *time.Duration, flagName, envName, usage string) {
		fromEnv(flagName, envName, func(v string) error {
			d, err := time.ParseDuration(v)
			if err == nil {
				*p = d
			}
			return err
		})
		fs.DurationVar(p, flagName, *p, usageOf(usage, envName))
	}
	boolean := func(p *bool, flagName, envName, usage string) {
		fromEnv(flagName, envName, func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%q is not true or false", v)
			}
			*p = b
			return nil
		})
		fs.BoolVar(p, flagName, *p, usageOf(usage, envName))
	}
	str(&c.Addr, "addr", "ADDR", "listen address")
	str(&c.RedisURL, "redis-url", "REDIS_URL", "Redis URL; empty runs on the embedded store")
	str(&c.RedisMode, "redis-mode", "REDIS_MODE", "single, cluster or sentinel")
	var redisURLFile string
	str(&redisURLFile, "redis-url-file", "REDIS_URL_FILE", "file holding the Redis URL, which may hold a password; DISPATCHER_REDIS_URL gives it inline instead")
	str(&c.RedisCAFile, "redis-ca-file", "REDIS_CA_FILE", "PEM file of the CA that signed Redis's certificate (rediss://), trusted instead of the system's")
	str(&c.RedisCertFile, "redis-cert-file", "REDIS_CERT_FILE", "PEM file of the client certificate for a Redis that requires one")
	str(&c.RedisKeyFile, "redis-key-file", "REDIS_KEY_FILE", "PEM file of the client certificate's key")
	num(&c.RedisWaitReplicas, "redis-wait-replicas", "REDIS_WAIT_REPLICAS", "Redis replicas that must acknowledge every write, and what every read shows, before it is answered (WAIT); 0 does not wait")
	dur(&c.RedisWaitTimeout, "redis-wait-timeout", "REDIS_WAIT_TIMEOUT", "how long an answer waits for its replicas; fewer answer 503 not-replicated")
	num(&c.MaxBatch, "max-batch", "MAX_BATCH", "orders per batch")
	body := byteSize(c.MaxBody)
	fromEnv("max-body", "MAX_BODY", body.Set)
	fs.Var(&body, "max-body", "request body limit, e.g. 4MiB (env DISPATCHER_MAX_BODY)")
	dur(&c.Retention, "order-retention", "ORDER_RETENTION", "how long completed and cancelled orders, and batches without an Idempotency-Key, stay queryable")
	dur(&c.IdempotencyTTL, "idempotency-ttl", "IDEMPOTENCY_TTL", "how long an Idempotency-Key and its batch are kept for replays")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "SHUTDOWN_TIMEOUT", "how long in-flight requests may drain on SIGTERM")
	dur(&c.RequestTimeout, "request-timeout", "REQUEST_TIMEOUT", "deadline of each request's store calls; past it the answer is 503")
	dur(&c.ReadHeaderTimeout, "read-header-timeout", "READ_HEADER_TIMEOUT", "time to read a request's headers")
	dur(&c.ReadTimeout, "read-timeout", "READ_TIMEOUT", "time to read a whole request, body included")
	dur(&c.WriteTimeout, "write-timeout", "WRITE_TIMEOUT", "time from the end of the request headers to the end of the response")
	dur(&c.IdleTimeout, "idle-timeout", "IDLE_TIMEOUT", "how long an idle keep-alive connection stays open")
	boolean(&c.Coalesce, "coalesce", "COALESCE", "merge the concurrent batches of one pool into shared Redis calls; false sends each batch alone")
	num(&c.CoalesceCalls, "coalesce-calls", "COALESCE_CALLS", "Redis calls of one pool in flight per replica when coalescing; batches beyond wait and share the next call")
	fromEnv("log-level", "LOG_LEVEL", func(v string) error {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return err
		}
		c.LogLevel = l
		return nil
	})
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, usageOf("least level logged: debug, info (a line per request), warn or error", "LOG_LEVEL"))
	str(&c.DebugAddr, "debug-addr", "DEBUG_ADDR", "listen address of the pprof debug listener, e.g. 127.0.0.1:6060; empty serves none")
	num(&c.MetricsMaxPools, "metrics-max-pools", "METRICS_MAX_POOLS", "distinct pool labels in the metrics; further pools are reported as _other")
	num(&c.MaxWatchers, "max-watchers", "MAX_WATCHERS", "open watch streams (GET /v1/pools/{pool}/watch) per replica; more are answered 503")
	var adminFile, clientFile string
	str(&adminFile, "admin-tokens-file", "ADMIN_TOKENS_FILE", "file of admin bearer tokens, one a line or comma-separated; DISPATCHER_ADMIN_TOKENS gives them inline instead")
	str(&clientFile, "client-tokens-file", "CLIENT_TOKENS_FILE", "file of client bearer tokens, one a line or comma-separated; DISPATCHER_CLIENT_TOKENS gives them inline instead")
	str(&c.TokensFile, "tokens-file", "TOKENS_FILE", "JSON file of tokens by sha256 digest, with name, role, pools and ratePerSec; reloaded on SIGHUP and when it changes (dispatcher token makes entries)")
	dur(&c.TokensCheckInterval, "tokens-check-interval", "TOKENS_CHECK_INTERVAL", "how often the tokens file is read to see whether it changed")
	str(&c.RateLimitOnError, "rate-limit-on-error", "RATE_LIMIT_ON_ERROR", "when the rate limiter fails (Redis down): open lets requests through unlimited, closed answers 503")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// Every problem at once: the variables that did not parse and that no
	// flag overrides, the URL and token files, and the values out of range.
	var errs []error
	for name, err := range envErrs {
		if !set[name] {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	c.MaxBody = int64(body)
	// (A variable that does not parse leaves its field at the default, so
	// that the range checks below report nothing made up.)
	url, urlErr := loadRedisURL(c.RedisURL, redisURLFile)
	if urlErr != nil {
		errs = append(errs, urlErr)
	}
	c.RedisURL = url
	var err error
	if c.AdminTokens, err = loadTokens("ADMIN_TOKENS", env("ADMIN_TOKENS"), adminFile); err != nil {
		errs = append(errs, err)
	}
	if c.ClientTokens, err = loadTokens("CLIENT_TOKENS", env("CLIENT_TOKENS"), clientFile); err != nil {
		errs = append(errs, err)
	}
	if c.TokensFile != "" {
		if c.FileTokens, c.FileTokensSum, err = loadTokensFile(c.TokensFile, envDigests(c.AdminTokens, c.ClientTokens)); err != nil {
			errs = append(errs, fmt.Errorf("DISPATCHER_TOKENS_FILE %s: %w", c.TokensFile, err))
		}
	}
	v := c
	if urlErr != nil {
		v.RedisURL = "(unread)" // its error is listed; no check that needs a URL adds another
	}
	return c, errors.Join(append(errs, v.Validate())...)
}

// Validate reports every setting that is out of range.
func (c config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("addr must not be empty"))
	}
	switch c.RedisMode {
	case "single", "cluster", "sentinel":
	default:
		errs = append(errs, fmt.Errorf("redis mode %q: want single, cluster or sentinel", c.RedisMode))
	}
	if c.CoalesceCalls < 1 || c.CoalesceCalls > 256 {
		errs = append(errs, fmt.Errorf("coalesce calls %d: want 1 to 256", c.CoalesceCalls))
	}
	if c.MaxBatch < 1 || c.MaxBatch > 1_000_000 {
		errs = append(errs, fmt.Errorf("max batch %d: want 1 to 1000000", c.MaxBatch))
	}
	if c.MaxBody < 1024 {
		errs = append(errs, fmt.Errorf("max body %d bytes: want at least 1KiB", c.MaxBody))
	}
	if c.Retention <= 0 {
		errs = append(errs, fmt.Errorf("order retention %s: want a positive duration", c.Retention))
	}
	if c.IdempotencyTTL <= 0 {
		errs = append(errs, fmt.Errorf("idempotency TTL %s: want a positive duration", c.IdempotencyTTL))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"shutdown timeout", c.ShutdownTimeout}, {"request timeout", c.RequestTimeout},
		{"read header timeout", c.ReadHeaderTimeout}, {"read timeout", c.ReadTimeout},
		{"write timeout", c.WriteTimeout}, {"idle timeout", c.IdleTimeout},
	} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("%s %s: want a positive duration", d.name, d.d))
		}
	}
	if c.RequestTimeout >= c.WriteTimeout {
		errs = append(errs, fmt.Errorf("request timeout %s: want it shorter than the write timeout %s, which would cut the connection before the 503 is written", c.RequestTimeout, c.WriteTimeout))
	}
	if c.ReadHeaderTimeout > c.ReadTimeout {
		errs = append(errs, fmt.Errorf("read header timeout %s: want at most the read timeout %s", c.ReadHeaderTimeout, c.ReadTimeout))
	}
	if c.RedisWaitReplicas < 0 || c.RedisWaitReplicas > maxWaitReplicas {
		errs = append(errs, fmt.Errorf("redis wait replicas %d: want 0 to %d", c.RedisWaitReplicas, maxWaitReplicas))
	}
	if c.RedisWaitTimeout <= 0 || c.RedisWaitTimeout > redis.MaxWaitTimeout {
		errs = append(errs, fmt.Errorf("redis wait timeout %s: want a positive duration up to %s, below the Redis read timeout", c.RedisWaitTimeout, redis.MaxWaitTimeout))
	} else if c.RedisWaitReplicas > 0 && c.RedisWaitTimeout >= c.RequestTimeout {
		errs = append(errs, fmt.Errorf("redis wait timeout %s: want it shorter than the request timeout %s", c.RedisWaitTimeout, c.RequestTimeout))
	}
	if c.RedisWaitReplicas > 0 && c.RedisURL == "" {
		errs = append(errs, errors.New("redis wait replicas: needs DISPATCHER_REDIS_URL; the embedded store has no replicas"))
	}
	// Settings of a Redis, given without one: most likely a URL variable
	// mistyped or missing, which would leave the service on a store that
	// forgets everything when it stops.
	if c.RedisURL == "" && c.RedisMode != "single" {
		errs = append(errs, fmt.Errorf("redis mode %s: needs DISPATCHER_REDIS_URL; without it the service runs on the embedded store", c.RedisMode))
	}
	if c.RedisURL == "" && (c.RedisCAFile != "" || c.RedisCertFile != "" || c.RedisKeyFile != "") {
		errs = append(errs, errors.New("redis TLS files: need DISPATCHER_REDIS_URL; without it the service runs on the embedded store"))
	}
	if c.TokensCheckInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("tokens check interval %s: want at least 10ms", c.TokensCheckInterval))
	}
	if c.RateLimitOnError != "open" && c.RateLimitOnError != "closed" {
		errs = append(errs, fmt.Errorf("rate limit on error %q: want open or closed", c.RateLimitOnError))
	}
	if c.MaxWatchers < 1 || c.MaxWatchers > 100000 {
		errs = append(errs, fmt.Errorf("max watchers %d: want 1 to 100000", c.MaxWatchers))
	}
	if c.MetricsMaxPools < 0 || c.MetricsMaxPools > 10000 {
		errs = append(errs, fmt.Errorf("metrics max pools %d: want 0 to 10000", c.MetricsMaxPools))
	}
	for _, t := range c.AdminTokens {
		if slices.Contains(c.ClientTokens, t) {
			errs = append(errs, errors.New("a token is both an admin and a client token: give each role its own"))
			break
		}
	}
	return errors.Join(errs...)
}

// byteSize is a flag value such as 4MiB, 512KiB, 1MB or 1048576.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	num := strings.TrimSpace(s)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return fmt.Errorf("%q is not a size such as 4MiB or 1048576", s)
	}
	*b = byteSize(n * mult)
	return nil
}
