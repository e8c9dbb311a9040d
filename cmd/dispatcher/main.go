// Command dispatcher runs the order-dispatch service: an HTTP API that
// assigns batches of orders to Scales, on Redis or on an embedded store.
//
// Configuration comes from DISPATCHER_* environment variables, each with a
// matching flag (run with -h to list them).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	out := newLogBuffer(os.Stdout, logFlushAfter)
	err := run(ctx, os.Args[1:], os.Getenv, out, os.Stderr)
	out.Flush()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "dispatcher:", err)
		os.Exit(1)
	}
}

// run starts the service and blocks until ctx is done, then drains in-flight
// requests and closes the store.
//
// `dispatcher probe` instead checks a running service's health (see probe),
// `dispatcher simulate` compares the strategies on one workload (see
// simulate), and `dispatcher token` makes a token and its line for the
// tokens file (see newToken).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "probe" {
		return probe(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "demo" {
		return demo(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "simulate" {
		return simulate(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 1 && (args[0] == "-version" || args[0] == "--version") {
		printVersion(stdout)
		return nil
	}
	if len(args) > 0 && args[0] == "token" {
		return newToken(args[1:], cryptoRand, stdout, stderr)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.RedisURL != "" {
		// (on the embedded store the heap is the pool's state: Go's default
		// target keeps it within twice that)
		tuneGC(getenv)
	}
	log := slog.New(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))

	// One registry for every package's metrics, served by the API at
	// /metrics: the store's collectors join it through metrics.Registry().
	metrics := api.NewMetrics(api.NewRegistry(), cfg.MetricsMaxPools)
	build := readBuildInfo()
	metrics.RegisterBuildInfo(build.Version, build.Revision, build.GoVersion)
	store, limiter, closeStore, err := openStore(ctx, cfg, log, metrics)
	if err != nil {
		return err
	}
	defer closeStore()

	warnAuth(log, cfg)
	var tokens *api.TokenSet
	if cfg.TokensFile != "" {
		if tokens, err = api.NewTokenSet(cfg.FileTokens); err != nil {
			return fmt.Errorf("DISPATCHER_TOKENS_FILE: %w", err) // parseConfig has checked them
		}
		reloader := newTokenReloader(cfg.TokensFile, tokens, cfg.FileTokensSum,
			envDigests(cfg.AdminTokens, cfg.ClientTokens), log, metrics.Registry())
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go reloader.run(ctx, hup, cfg.TokensCheckInterval)
	}
	svc := dispatch.NewService(store, dispatch.Config{
		MaxBatch:         cfg.MaxBatch,
		IdempotencyTTL:   cfg.IdempotencyTTL,
		NoCoalesce:       !cfg.Coalesce,
		CoalesceCalls:    cfg.CoalesceCalls,
		ObserveCoalesced: metrics.ObserveCoalesced,
		Health:           metrics.HealthObserver(log),
	})
	// Closed when the drain begins, so that watch streams end rather than
	// hold it until DISPATCHER_SHUTDOWN_TIMEOUT.
	stopping := make(chan struct{})
	handler := api.New(svc, api.Options{
		MaxBody:             cfg.MaxBody,
		RequestTimeout:      cfg.RequestTimeout,
		AdminTokens:         cfg.AdminTokens,
		ClientTokens:        cfg.ClientTokens,
		Tokens:              tokens,
		Limiter:             limiter,
		RateLimitFailClosed: cfg.RateLimitOnError == "closed",
		Metrics:             metrics,
		Logger:              log,
		Spec:                dispatcher.OpenAPI,
		Version:             build.Version,
		MaxWatchers:         cfg.MaxWatchers,
		Stopping:            stopping,
	})

	// Open the listeners first so that a bad or busy address fails start-up.
	debug, err := startDebug(cfg.DebugAddr, log)
	if err != nil {
		return err
	}
	defer debug.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// api.Listener and api.ConnContext let a batch's answer leave in one
	// write however large (api/onewrite.go).
	ln = api.Listener(ln)
	srv := &http.Server{
		Handler:           handler,
		ConnContext:       api.ConnContext,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(func() { close(stopping) })
	log.Info("listening", "addr", ln.Addr().String(), "version", build.Version, "revision", build.Revision, "maxBatch", cfg.MaxBatch, "maxBody", cfg.MaxBody,
		"orderRetention", cfg.Retention.String(), "idempotencyTTL", cfg.IdempotencyTTL.String(), "requestTimeout", cfg.RequestTimeout.String(),
		"auth", authSummary(cfg.AdminTokens, cfg.ClientTokens, cfg.FileTokens), "metricsMaxPools", cfg.MetricsMaxPools)

	// Scale health: this replica ticks over the pools once a second, as
	// every replica does (DESIGN §8); it stops before the server drains.
	hctx, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		svc.RunHealth(hctx, dispatch.TickInterval, func(err error) {
			log.Warn("scale health tick", "error", err.Error())
		})
	}()
	defer func() { stopHealth(); <-healthDone }()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stopHealth()
	<-healthDone
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// warnAuth warns when the tokens leave the API open, or leave the admin
// routes to nobody: at warn, or at the level logged if that is higher, so
// that no log level hides it (DESIGN §6: "says so loudly").
func warnAuth(log *slog.Logger, cfg config) {
	level := max(slog.LevelWarn, cfg.LogLevel)
	fileAdmins := 0
	for _, t := range cfg.FileTokens {
		if t.Role == api.RoleAdmin {
			fileAdmins++
		}
	}
	switch {
	case cfg.TokensFile != "" && len(cfg.AdminTokens)+fileAdmins == 0:
		log.Log(context.Background(), level, "no admin token in DISPATCHER_ADMIN_TOKENS nor DISPATCHER_TOKENS_FILE: nobody may create, change or delete pools and Scales, nor read /metrics, until the file gives one")
	case cfg.TokensFile != "":
	case len(cfg.AdminTokens)+len(cfg.ClientTokens) == 0:
		log.Log(context.Background(), level, "NO TOKENS CONFIGURED: the API is open; anyone who can reach it may dispatch, change and delete pools and read /metrics. "+
			"Set DISPATCHER_ADMIN_TOKENS and DISPATCHER_CLIENT_TOKENS (or their _FILE variants), or DISPATCHER_TOKENS_FILE")
	case len(cfg.AdminTokens) == 0:
		log.Log(context.Background(), level, "no DISPATCHER_ADMIN_TOKENS: nobody may create, change or delete pools and Scales, nor read /metrics")
	}
}
