package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// demoPool is the pool `dispatcher demo` fills.
const demoPool = "demo"

// demo runs the service as run does (same flags and variables; the
// embedded store unless DISPATCHER_REDIS_URL is set) and, once it listens,
// sends it traffic until ctx is done: a pool of 24 Scales, batches of 1 to
// 40 orders ten times a second, completions of the oldest orders, and a
// Scale that goes down and comes back every 20 s. It prints the address of
// the dashboard.
func demo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	addr := make(chan string, 1)
	w := &listenWatch{out: stdout, addr: addr}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case a := <-addr:
			base := "http://" + strings.Replace(a, "[::]", "localhost", 1)
			fmt.Fprintf(stderr, "dispatcher demo: open %s/ui/#/pool/%s (Ctrl-C stops)\n", base, demoPool)
			if err := demoTraffic(ctx, base); err != nil && ctx.Err() == nil {
				fmt.Fprintln(stderr, "dispatcher demo: traffic stopped:", err)
			}
		case <-ctx.Done():
		}
	}()
	err := run(ctx, args, getenv, w, stderr)
	cancel()
	<-done
	return err
}

// listenWatch passes the service's log through and hands out the address
// of its "listening" line.
type listenWatch struct {
	out  io.Writer
	addr chan<- string
	once sync.Once
}

func (l *listenWatch) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
			l.once.Do(func() { l.addr <- rec.Addr })
		}
	}
	return l.out.Write(p)
}

// demoTraffic drives the service at base as clients and Scales would.
func demoTraffic(ctx context.Context, base string) error {
	send := func(method, path string, body any) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 300 {
			defer resp.Body.Close()
			msg, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, msg)
		}
		return resp, nil
	}
	do := func(method, path string, body any) error {
		resp, err := send(method, path, body)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	pool := "/v1/pools/" + demoPool
	if err := do(http.MethodPut, pool, map[string]any{"strategy": "waterfill"}); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 24 {
		spec := map[string]any{"orderCount": rng.IntN(30)}
		if i%7 == 3 {
			spec["maxOrders"] = 60
		}
		if err := do(http.MethodPut, fmt.Sprintf("%s/scales/S%02d", pool, i), spec); err != nil {
			return err
		}
	}
	var held []string
	next, tick := 0, time.NewTicker(100*time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		orders := make([]map[string]string, 1+rng.IntN(40))
		for i := range orders {
			next++
			orders[i] = map[string]string{"id": fmt.Sprintf("d-%d", next)}
			held = append(held, orders[i]["id"])
		}
		if err := do(http.MethodPost, pool+"/batches", map[string]any{"orders": orders}); err != nil {
			return err
		}
		if len(held) > 400 {
			k := 10 + rng.IntN(30)
			done := make([]map[string]string, k)
			for i := range done {
				done[i] = map[string]string{"id": held[i]}
			}
			held = held[k:]
			// An order may have moved or been cancelled meanwhile; the
			// demo goes on either way.
			_ = do(http.MethodPost, pool+"/completions", map[string]any{"orders": done})
		}
		switch n % 200 {
		case 100:
			_ = do(http.MethodPut, pool+"/scales/S05", map[string]any{"state": "down"})
			_ = do(http.MethodPost, pool+"/scales/S05/reassign", map[string]any{})
		case 199:
			_ = do(http.MethodPut, pool+"/scales/S05", map[string]any{"state": "active"})
		}
	}
}
