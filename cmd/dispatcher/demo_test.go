package main

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestDemo runs `dispatcher demo` and reads its pool: 24 Scales that the
// demo's traffic loads, then a clean stop.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &logSink{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"demo", "-addr", "127.0.0.1:0"}, envOf(nil), sink, io.Discard) }()
	var addr string
	select {
	case addr = <-sink.addr:
	case err := <-done:
		t.Fatalf("demo returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no listening line")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct {
			Scales []struct{ Outstanding int }
		}
		if getJSON(t, http.DefaultClient, "http://"+addr+"/v1/pools/demo/scales", &list) == http.StatusOK && len(list.Scales) == 24 {
			total := 0
			for _, s := range list.Scales {
				total += s.Outstanding
			}
			if total > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no demo pool with orders within 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopRun(t, cancel, done, "demo")
}
