package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// probe implements `dispatcher probe`: a health check for images without a
// shell or curl (distroless). It GETs a path of the local service and
// returns nil on a 2xx answer, so the process exits 0, else 1.
func probe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dispatcher probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := getenv("DISPATCHER_ADDR")
	if addr == "" {
		addr = defaultConfig().Addr
	}
	path := fs.String("path", "/healthz", "path to GET: /healthz (liveness) or /readyz (readiness)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	fs.StringVar(&addr, "addr", addr, "the service's listen address (env DISPATCHER_ADDR)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("probe: address %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + *path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("probe: GET %s: %s", url, resp.Status)
	}
	fmt.Fprintf(stdout, "GET %s: %s\n", url, resp.Status)
	return nil
}
