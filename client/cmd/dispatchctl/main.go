// Command dispatchctl drives a dispatcher service from the command line:
// pools, Scales, dispatch, orders, the waterfill table, and a live view of
// a pool's Scales (watch).
//
//	go install github.com/dispatcher/dispatcher/client/cmd/dispatchctl@latest
//	export DISPATCHER_URL=http://127.0.0.1:8080 DISPATCHER_TOKEN=…
//	dispatchctl pools put eu -strategy waterfill
//	dispatchctl scales put eu S1 -order-count 1
//	dispatchctl dispatch eu o-1 o-2 o-3
//	dispatchctl watch eu
//
// Run it without arguments for the list of commands. It exits 0 when the
// command succeeded, 1 when it failed (the problem's title and detail on
// stderr), 2 on a usage error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
