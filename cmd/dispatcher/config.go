package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
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
	// ShutdownTimeout bounds how long in-flight requests may drain.
	ShutdownTimeout time.Duration
}

func defaultConfig() config {
	return config{
		Addr:            ":8080",
		RedisMode:       "single",
		MaxBatch:        10000,
		MaxBody:         4 << 20,
		Retention:       24 * time.Hour,
		ShutdownTimeout: 20 * time.Second,
	}
}

// parseConfig reads the environment through getenv, then the flags in args.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := defaultConfig()
	fs := flag.NewFlagSet("dispatcher", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name string) string { return getenv("DISPATCHER_" + name) }
	var errs []error
	str := func(p *string, flagName, envName, usage string) {
		if v := env(envName); v != "" {
			*p = v
		}
		fs.StringVar(p, flagName, *p, usage+" (env DISPATCHER_"+envName+")")
	}
	num := func(p *int, flagName, envName, usage string) {
		if v := env(envName); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("DISPATCHER_%s: %q is not an integer", envName, v))
			}
			*p = n
		}
		fs.IntVar(p, flagName, *p, usage+" (env DISPATCHER_"+envName+")")
	}
	dur := func(p *time.Duration, flagName, envName, usage string) {
		if v := env(envName); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("DISPATCHER_%s: %w", envName, err))
			}
			*p = d
		}
		fs.DurationVar(p, flagName, *p, usage+" (env DISPATCHER_"+envName+")")
	}
	str(&c.Addr, "addr", "ADDR", "listen address")
	str(&c.RedisURL, "redis-url", "REDIS_URL", "Redis URL; empty runs on the embedded store")
	str(&c.RedisMode, "redis-mode", "REDIS_MODE", "single, cluster or sentinel")
	num(&c.MaxBatch, "max-batch", "MAX_BATCH", "orders per batch")
	body := byteSize(c.MaxBody)
	if v := env("MAX_BODY"); v != "" {
		if err := body.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("DISPATCHER_MAX_BODY: %w", err))
		}
	}
	fs.Var(&body, "max-body", "request body limit, e.g. 4MiB (env DISPATCHER_MAX_BODY)")
	dur(&c.Retention, "order-retention", "ORDER_RETENTION", "how long completed and cancelled orders stay queryable")
	dur(&c.ShutdownTimeout, "shutdown-timeout", "SHUTDOWN_TIMEOUT", "how long in-flight requests may drain on SIGTERM")
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.MaxBody = int64(body)
	return c, c.Validate()
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
	if c.MaxBatch < 1 || c.MaxBatch > 1_000_000 {
		errs = append(errs, fmt.Errorf("max batch %d: want 1 to 1000000", c.MaxBatch))
	}
	if c.MaxBody < 1024 {
		errs = append(errs, fmt.Errorf("max body %d bytes: want at least 1KiB", c.MaxBody))
	}
	if c.Retention <= 0 {
		errs = append(errs, fmt.Errorf("order retention %s: want a positive duration", c.Retention))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("shutdown timeout %s: want a positive duration", c.ShutdownTimeout))
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
