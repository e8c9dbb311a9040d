// Command dispatch-bench is the load tool of dispatcher. It has five modes:
//
//	dispatch-bench scales -url URL[,URL…] -pool P -n 100000 [-max-count C]
//	dispatch-bench run    -url URL[,URL…] -pool P -concurrency 16 -batch 100 -duration 30s
//	dispatch-bench noop   -addr 127.0.0.1:0
//	dispatch-bench thin   -addr 127.0.0.1:0 -redis redis://127.0.0.1:6379 [-scales 16]
//	dispatch-bench plot   -o out.svg [-title T] [-ceiling 1:19000,100:103000] [label=]report.json …
//
// scales creates a pool and registers N Scales fast; run drives batches at
// one or more replicas for a fixed time and reports orders/s, batches/s,
// latency percentiles and errors by status and problem type; noop serves
// a trivial handler, so that run can measure the HTTP floor in the same
// session; thin serves the thin service, which decodes a batch and runs
// ceiling/minimal.lua on Redis through go-redis and nothing else, the
// floor of this architecture (issue 21); plot draws the -json reports of
// run as an SVG chart of orders/s by batch size.
//
// A session that compares the service with the HTTP floor:
//
//	go run ./cmd/dispatcher -addr 127.0.0.1:8080 &
//	dispatch-bench noop -addr 127.0.0.1:8081 &
//	dispatch-bench scales -url http://127.0.0.1:8080 -pool bench -n 1000
//	dispatch-bench run -url http://127.0.0.1:8080 -pool bench -batch 100 -duration 10s -warmup 2s
//	dispatch-bench run -url http://127.0.0.1:8081 -pool bench -batch 100 -duration 10s -warmup 2s
//
// run sends unique order ids (a random per-run prefix and a counter; with
// -ids none the service names the orders), optionally an Idempotency-Key
// per batch (-idempotency), and with -complete completes every batch it
// dispatched, so that the loads stay flat. The rates and latencies (of the
// successful batches, from an HDR-style histogram within 0.8 %) cover the
// measured window only; the totals count the warmup and the requests still
// in flight when the window closed too, which finish before the report.
// An answer that is not 2xx counts by its status and problem type ("503
// outcome-unknown": that batch may have been applied, unlike "503
// unavailable"); a request without an answer as timeout, canceled or
// transport, and the report gives one such error. run exits 1 when
// no batch succeeded, else 0 whatever the errors: read the report.
// -json prints the report as JSON.
//
// plot draws one line per label and concurrency, both axes on log scales.
// An argument label=file gives its report the label (default "run"), and
// the file may be a glob pattern, so that svc='/tmp/out/c-svc-*.json' takes
// every service report; -ceiling adds the Redis ceiling, orders/s by batch
// size, as a dashed line (a horizontal one when given one point).
//
// The bearer token is taken from -token, else from DISPATCH_BENCH_TOKEN.
// Run a mode with -h to list its flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "dispatch-bench:", err)
		os.Exit(1)
	}
}

// errUsage is returned after the usage was printed for a bad command line.
var errUsage = errors.New("usage")

const usage = `usage:
  dispatch-bench scales -url URL[,URL…] -pool P -n N [flags]   create a pool and register N Scales
  dispatch-bench run    -url URL[,URL…] -pool P [flags]        drive batches and report throughput
  dispatch-bench noop   -addr 127.0.0.1:0                      serve a no-op handler (the HTTP floor)
  dispatch-bench thin   -addr 127.0.0.1:0 -redis URL           serve the thin service (minimal.lua on Redis)
  dispatch-bench plot   -o out.svg [flags] [label=]file …      draw run -json reports as an SVG chart
run a mode with -h for its flags
`

// run executes the mode named by args[0]. The progress line goes to stderr,
// reports and the noop and thin servers' addresses to stdout.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	mode, args := args[0], args[1:]
	switch mode {
	case "scales":
		cfg, err := parseScalesConfig(args, getenv, stderr)
		if err != nil {
			return err
		}
		return runScales(ctx, cfg, stdout, stderr)
	case "run":
		cfg, err := parseLoadConfig(args, getenv, stderr)
		if err != nil {
			return err
		}
		return runLoad(ctx, cfg, stdout, stderr)
	case "noop":
		cfg, err := parseNoopConfig(args, stderr)
		if err != nil {
			return err
		}
		return runNoop(ctx, cfg, stdout)
	case "thin":
		cfg, err := parseThinConfig(args, stderr)
		if err != nil {
			return err
		}
		return runThin(ctx, cfg, stdout)
	case "plot":
		cfg, err := parsePlotConfig(args, stderr)
		if err != nil {
			return err
		}
		return runPlot(cfg, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	default:
		fmt.Fprintf(stderr, "unknown mode %q\n%s", mode, usage)
		return errUsage
	}
}
