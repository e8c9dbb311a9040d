package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// watchEvents opens a watch of url and sends the data of each snapshot
// event to the channel it returns, which is closed when the stream ends.
func watchEvents(t *testing.T, ctx context.Context, url string) <-chan string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out <- data
			}
		}
	}()
	return out
}

// TestWatchAcrossReplicas watches a pool through one replica while
// another, on the same Redis, dispatches to it: the watch shows the batch
// within an interval or two.
func TestWatchAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	env := map[string]string{"DISPATCHER_REDIS_URL": srv.URL()}
	a, _ := startRun(t, nil, env)
	b, _ := startRun(t, nil, env)
	do(t, http.MethodPut, "http://"+b+"/v1/pools/x", `{}`, http.StatusCreated)
	do(t, http.MethodPut, "http://"+b+"/v1/pools/x/scales/S1", `{}`, http.StatusCreated)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := watchEvents(t, ctx, "http://"+a+"/v1/pools/x/watch?intervalMs=250")
	<-events
	do(t, http.MethodPost, "http://"+b+"/v1/pools/x/batches", `{"orders":[{"id":"o1"},{"id":"o2"}]}`, http.StatusCreated)
	sent := time.Now()
	// A read that began before the batch may still be on its way: the
	// snapshot after it must show the batch.
	for i := range 2 {
		var snap struct {
			Counters struct{ Dispatched int } `json:"counters"`
			Scales   []struct{ Outstanding int }
		}
		data, ok := <-events
		if !ok {
			t.Fatal("the stream ended")
		}
		if err := json.Unmarshal([]byte(data), &snap); err != nil {
			t.Fatal(err)
		}
		if snap.Counters.Dispatched == 2 && snap.Scales[0].Outstanding == 2 {
			t.Logf("replica A showed the batch sent through B %v later, in snapshot %d", time.Since(sent).Round(time.Millisecond), i+1)
			return
		}
	}
	t.Error("two snapshots after the batch through B, the watch through A does not show it")
}

// TestShutdownEndsWatches checks that SIGTERM's drain ends open watch
// streams instead of waiting for them until the shutdown timeout: run
// returns nil, which it does not when the drain times out.
func TestShutdownEndsWatches(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &logSink{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-shutdown-timeout", "20s"}, envOf(nil), sink, io.Discard)
	}()
	var addr string
	select {
	case addr = <-sink.addr:
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no listening line; log:\n%s", sink)
	}
	base := "http://" + addr
	do(t, http.MethodPut, base+"/v1/pools/p", `{}`, http.StatusCreated)
	streams := make([]<-chan string, 3)
	for i := range streams {
		streams[i] = watchEvents(t, context.Background(), base+"/v1/pools/p/watch?intervalMs=60000")
		<-streams[i]
	}
	stopRun(t, cancel, done, "run")
	for i, s := range streams {
		for range s {
		}
		t.Logf("stream %d ended", i)
	}
	if !hasLogLine(sink.String(), "stopped") {
		t.Errorf("no stopped line; log:\n%s", sink)
	}
}
