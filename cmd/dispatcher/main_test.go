package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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
		for _, line := range strings.Split(s.buf.String(), "\n") {
			var rec struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				s.found = true
				s.addr <- rec.Addr
				break
			}
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

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: got %v, want nil after shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRunFailsOnBusyAddress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &logSink{addr: make(chan string, 1)}
	go func() { _ = run(ctx, []string{"-addr", "127.0.0.1:0"}, envOf(nil), sink, io.Discard) }()
	var addr string
	select {
	case addr = <-sink.addr:
	case <-time.After(10 * time.Second):
		t.Fatalf("first server did not start; log:\n%s", sink)
	}
	err := run(ctx, []string{"-addr", addr}, envOf(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("got %v, want a listen error for a busy address", err)
	}
}
