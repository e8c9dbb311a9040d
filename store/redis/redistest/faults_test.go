package redistest_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestAOFSurvivesKill: a write acknowledged by a StartAOF server is there
// after a SIGKILL and a restart.
func TestAOFSurvivesKill(t *testing.T) {
	s := redistest.StartAOF(t)
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after Kill: got nil, want an error")
	}
	s.Restart()
	got, err := c.Get(ctx, "k").Result()
	for i := 0; err != nil && i < 3; i++ { // the pooled connection died with the server
		got, err = c.Get(ctx, "k").Result()
	}
	if err != nil || got != "v" {
		t.Errorf("GET k after Kill and Restart: got %q, %v; want v", got, err)
	}
}

// TestPauseResume: a paused server answers nothing until it is resumed.
func TestPauseResume(t *testing.T) {
	s := redistest.Start(t)
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING of a paused server: got nil, want a timeout")
	}
	s.Resume()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after Resume: %v", err)
	}
	s.Pause() // left paused: the cleanup must still stop it promptly
}

// TestProxy loses one reply after Redis ran the command, holds another,
// and delays replies.
func TestProxy(t *testing.T) {
	s := redistest.Start(t)
	p := redistest.NewProxy(t, s.Addr(), "incr")
	ctx := context.Background()
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	defer c.Close()

	p.DropNext(1)
	if err := c.Incr(ctx, "n").Err(); err == nil {
		t.Fatal("INCR with its reply dropped: got nil, want an error")
	}
	p.HoldNext(1)
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := c.Incr(hctx, "n").Err(); err == nil || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("INCR with its reply held: got %v after %s, want an error at the deadline", err, time.Since(start))
	}
	if got := p.Dropped(); got != 2 {
		t.Errorf("Dropped: got %d, want 2", got)
	}
	p.SetDelay(150 * time.Millisecond)
	start = time.Now()
	n, err := c.Incr(ctx, "n").Result()
	if err != nil || n != 3 {
		t.Fatalf("INCR through the proxy: got %d, %v; want 3 (both lost replies ran)", n, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("delayed INCR answered in %s, want at least 150ms", d)
	}
}
