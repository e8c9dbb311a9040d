package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNoopServesAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"noop", "-addr", "127.0.0.1:0"}, noEnv, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v (run: %v)", err, <-done)
	}
	url, found := strings.CutPrefix(strings.TrimSpace(line), "noop listening on ")
	if !found {
		t.Fatalf("got %q, want noop listening on URL", line)
	}
	go io.Copy(io.Discard, pr)

	resp, err := http.Post(url+"/v1/pools/p/batches", "application/json", strings.NewReader(`{"orders":[{}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || string(body) != noopBody {
		t.Errorf("POST: got %d %q, want 201 %q", resp.StatusCode, body, noopBody)
	}
	resp, err = http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: got %d, want 405", resp.StatusCode)
	}

	rep := runLoadJSON(t, context.Background(), "-url", url, "-concurrency", "2", "-batch", "5", "-duration", "200ms", "-complete")
	// The noop server's answer to a completion holds no count: the tool
	// counts none completed and says why, for every batch.
	if rep.Total.Batches == 0 || len(rep.Total.Errors) != 0 || rep.Completed != 0 ||
		rep.CompletionErrors["answer without a completed count"] != rep.Total.Batches {
		t.Errorf("run against noop: got %d batches, errors %v, %d completed, completion errors %v; want some, none, 0, one a batch",
			rep.Total.Batches, rep.Total.Errors, rep.Completed, rep.CompletionErrors)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("noop: got %v, want nil after the context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("noop did not stop")
	}
}

func TestNoopStopsAfterFor(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"noop", "-for", "100ms"}, noEnv, io.Discard, io.Discard)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("got %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("noop -for 100ms did not stop")
	}
}
