package main

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestGracefulShutdown sends SIGTERM to a dispatcher process under load.
// Its Redis replies come 500ms late through a proxy, so that at the signal
// it has requests in flight, each in the middle of a store call. It must
// stop accepting connections at once, answer every request in flight (201:
// the store is still open while it drains), then exit 0. The clients retry
// the batches it refused on a second replica with their keys. Afterwards
// every batch answered 201, by either, is in Redis exactly once.
func TestGracefulShutdown(t *testing.T) {
	srv := redistest.Start(t)
	slow := redistest.NewProxy(t, srv.Addr(), "")
	bin := buildDispatcher(t)
	env := redisEnv(slow.URL())
	env["DISPATCHER_SHUTDOWN_TIMEOUT"] = "10s"
	a := startProc(t, bin, "draining", env)
	b := startProc(t, bin, "survivor", redisEnv(srv.URL()))
	setUpPool(t, b.URL, "p", 4)
	slow.SetDelay(500 * time.Millisecond)

	const workers, batches = 8, 30
	targets := []string{a.URL, b.URL}
	l := loadtest.Start(t, loadtest.Spec{Pool: "p", Prefix: "s", Workers: workers, Batches: batches, Orders: loadtest.UpTo(6), Keys: true, Primary: true,
		Targets: func() []string { return targets }, GiveUp: 30 * time.Second})
	l.WaitAcked(t, 2*workers, 30*time.Second)
	a.signal(syscall.SIGTERM)
	sigAt := time.Now()
	if !a.logged("shutting down", 5*time.Second) {
		t.Fatalf("no shutting down line 5s after SIGTERM; log:\n%s", a.log)
	}

	// Stops accepting: a new connection is refused while requests still drain.
	refused, stillDraining, refusedAfter := false, false, time.Duration(0)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c, err := net.DialTimeout("tcp", a.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			continue
		}
		if isRefused(err) {
			refused, stillDraining, refusedAfter = true, !a.exited(), time.Since(sigAt)
			break
		}
	}
	if !refused || !stillDraining {
		t.Errorf("a new connection to %s: refused %v (%s after SIGTERM), while it still drained %v; want both", a.name, refused, refusedAfter, stillDraining)
	}
	if err := a.wait(15 * time.Second); err != nil {
		t.Fatalf("%s after SIGTERM: %v, want exit status 0", a.name, err)
	}
	exitedAfter := time.Since(sigAt)
	log := a.log.String()
	if i, j := strings.Index(log, `"msg":"shutting down"`), strings.Index(log, `"msg":"stopped"`); i < 0 || j < i {
		t.Errorf("want shutting down, then stopped, in the log:\n%s", log)
	}
	l.Wait(t)

	drained, before := 0, 0
	for _, ack := range l.Acks {
		if ack.Target != a.URL {
			continue
		}
		if ack.At.After(sigAt) {
			drained++
		} else {
			before++
		}
	}
	if drained == 0 {
		t.Errorf("no request in flight at the SIGTERM was answered: the drain is untested")
	}
	if n := l.Failures["reset"] + l.Failures["timeout"]; n > 0 {
		t.Errorf("%d requests cut without an answer; a graceful shutdown answers every request it accepted", n)
	}
	verify(t, b.URL, l)
	t.Logf("%d batches acknowledged: %d by %s before SIGTERM, %d answered 201 while it drained, %d by %s after retries; "+
		"connections refused %s after the signal, exit 0 after %s; lost 0 checked by GET on %s; failed attempts: %s",
		len(l.Acks), before, a.name, drained, len(l.Acks)-before-drained, b.name,
		refusedAfter.Round(time.Millisecond), exitedAfter.Round(time.Millisecond), b.name, l.FailureSummary())
}
