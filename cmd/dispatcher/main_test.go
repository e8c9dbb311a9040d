package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// logSink collects the service's JSON log lines and hands out the listen
// address once it is logged.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addr  chan string
	found bool
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if !s.found {
		if rec, ok := logRecord(s.buf.String(), "listening"); ok {
			s.found = true
			s.addr <- fmt.Sprint(rec["addr"])
		}
	}
	return len(p), nil
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestRunServesAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &logSink{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, envOf(nil), sink, io.Discard) }()

	var addr string
	select {
	case addr = <-sink.addr:
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no listening line; log:\n%s", sink)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: got %d, want 200", resp.StatusCode)
	}
	if !strings.Contains(sink.String(), "embedded in-memory store") {
		t.Errorf("want a warning about the embedded store; log:\n%s", sink)
	}

	stopRun(t, cancel, done, "run")
}

func TestRunFailsOnBusyAddress(t *testing.T) {
	addr, _ := startRun(t, nil, nil)
	err := run(context.Background(), []string{"-addr", addr}, envOf(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("got %v, want a listen error for a busy address", err)
	}
}

func TestProbe(t *testing.T) {
	ctx := context.Background()
	addr, _ := startRun(t, nil, nil)
	env := envOf(map[string]string{"DISPATCHER_ADDR": addr})
	var out bytes.Buffer
	if err := run(ctx, []string{"probe", "-path", "/readyz"}, env, &out, io.Discard); err != nil {
		t.Errorf("probe of a live service: got %v, want nil", err)
	}
	if !strings.Contains(out.String(), "200 OK") {
		t.Errorf("probe output: got %q, want it to show 200 OK", out.String())
	}
	if err := run(ctx, []string{"probe", "-path", "/nope"}, env, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("probe of a missing path: got %v, want a 404 error", err)
	}
	dead := envOf(map[string]string{"DISPATCHER_ADDR": "127.0.0.1:1"})
	if err := run(ctx, []string{"probe"}, dead, io.Discard, io.Discard); err == nil {
		t.Error("probe of a closed port: got nil, want an error")
	}
}

func TestRunOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	// startRun stops the service when the test ends and checks that run
	// returns nil.
	addr, sink := startRun(t, nil, map[string]string{"DISPATCHER_REDIS_URL": srv.URL()})
	ctx := context.Background()
	base := "http://" + addr
	for _, step := range []struct{ method, path, body string }{
		{http.MethodPut, "/v1/pools/p", `{}`},
		{http.MethodPut, "/v1/pools/p/scales/S1", `{"orderCount":1}`},
		{http.MethodPost, "/v1/pools/p/batches", `{"orders":[{"id":"o-1"}]}`},
	} {
		req, _ := http.NewRequest(step.method, base+step.path, strings.NewReader(step.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("%s %s: got %d, want 201", step.method, step.path, resp.StatusCode)
		}
	}
	// The order is in Redis, not in this process: a second client sees it.
	rc := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer rc.Close()
	ok, err := rc.HExists(ctx, "dispatch:{pool:p}:orders", "o-1").Result()
	if err != nil || !ok {
		t.Errorf("order o-1 in Redis: got %v, %v; want it held", ok, err)
	}
	if strings.Contains(sink.String(), "embedded in-memory store") {
		t.Errorf("want no embedded-store warning with a Redis URL; log:\n%s", sink)
	}
}

// TestLogLevel checks that a request is logged at the default level and
// not at error, where the warning of an open API still is.
func TestLogLevel(t *testing.T) {
	addr, sink := startRun(t, nil, nil)
	if status, _ := get(t, "http://"+addr+"/healthz", ""); status != http.StatusOK {
		t.Fatalf("healthz: got %d, want 200", status)
	}
	if !hasLogLine(sink.String(), "request") {
		t.Errorf("default level: no request line; log:\n%s", sink)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	quiet := &logSink{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", addr, "-log-level", "error"}, envOf(nil), quiet, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	if _, err := readyWithin("http://"+addr, 10*time.Second); err != nil {
		t.Fatalf("-log-level error: %v; log:\n%s", err, quiet)
	}
	if status, _ := get(t, "http://"+addr+"/healthz", ""); status != http.StatusOK {
		t.Fatalf("-log-level error: healthz: got %d, want 200", status)
	}
	log := quiet.String()
	if hasLogLine(log, "request") || hasLogLine(log, "listening") {
		t.Errorf("-log-level error: got info lines; log:\n%s", log)
	}
	// The open-API warning shows at any level (DESIGN §6: loudly).
	if !strings.Contains(log, `"level":"ERROR","msg":"NO TOKENS CONFIGURED`) {
		t.Errorf("-log-level error: the open-API warning is missing; log:\n%s", log)
	}
}

// hasLogLine reports whether log holds a JSON line whose msg is msg.
func hasLogLine(log, msg string) bool {
	_, ok := logRecord(log, msg)
	return ok
}

// logRecord returns the first JSON line of log whose msg is msg.
func logRecord(log, msg string) (map[string]any, bool) {
	for _, line := range strings.Split(log, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			return rec, true
		}
	}
	return nil, false
}

// stopRun cancels a run (or demo) that sends its result on done, and fails
// t unless it returns nil within 30 s.
func stopRun(t *testing.T, cancel context.CancelFunc, done <-chan error, what string) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s after cancel: got %v, want nil", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return after cancel", what)
	}
}
