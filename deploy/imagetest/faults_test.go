//go:build image

package imagetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
)

// The faults, each under load from clients that retry with their
// Idempotency-Key on the next replica, each ending with the stack as it
// began (every container running) and the same check: every acknowledged
// batch recorded as answered, the Scales' counts equal to the records.

// urls returns the replicas' base URLs.
func (s *stack) urls(tb testing.TB) []string {
	tb.Helper()
	var urls []string
	for _, r := range s.replicas {
		urls = append(urls, s.url(tb, r))
	}
	return urls
}

// keepRunning makes sure, when the test ends, that the container runs
// again, whatever happened to it, so that one test's failure does not
// become the next one's.
func (s *stack) keepRunning(tb testing.TB, name string) {
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = s.p.run(ctx, "unpause", name)
		if out, _ := s.p.run(ctx, "inspect", "--format", "{{.State.Running}}", name); out != "true" {
			_, _ = s.p.run(ctx, "start", name)
		}
		if name == s.redis {
			return
		}
		if err := s.waitReady(ctx, name, time.Minute); err != nil {
			tb.Errorf("after the test: %v", err)
		}
	})
}

// restart starts a stopped container again and waits until it is ready.
func (s *stack) restart(tb testing.TB, name string) {
	tb.Helper()
	s.p.must(tb, "start", name)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.waitReady(ctx, name, time.Minute); err != nil {
		tb.Fatal(err)
	}
}

// TestStopDrains stops a replica with `podman stop` (SIGTERM, then SIGKILL
// after compose.yaml's stop_grace_period, which podman-compose 1.0.3 does
// not pass on) while every client sends its
// first attempts to it. The replica drains: it exits 0 within the grace
// period, and every batch it acknowledged is recorded. Then it starts
// again and serves.
func TestStopDrains(t *testing.T) {
	s := shared(t)
	urls := s.urls(t)
	victim := s.replicas[0]
	s.keepRunning(t, victim)
	setUpPool(t, urls[1], "stop", 5)
	targets := loadtest.NewTargets(urls...)
	l := startLoad(t, "stop", targets, true)
	l.WaitAcked(t, l.Acked()+100, 2*time.Minute)
	stopped := time.Now()
	s.p.must(t, "stop", "--time", s.grace, victim)
	took := time.Since(stopped)
	targets.Set(urls[1:]...)
	l.WaitAcked(t, l.Acked()+50, 2*time.Minute) // on the other replicas
	l.Finish(t)

	c := s.info(t, victim)
	if c.State.Running || c.State.ExitCode != 0 {
		t.Errorf("%s after podman stop: got %s, exit code %d, want exited 0 (drained within the grace period, not killed)", victim, c.State.Status, c.State.ExitCode)
	}
	logs := s.p.must(t, "logs", victim)
	if !strings.Contains(logs, `"msg":"stopped"`) {
		t.Errorf("%s logs: got no \"stopped\", want the end of a drain; last lines:\n%s", victim, tail(logs, 5))
	}
	// The batches the victim answered after its "shutting down": those it
	// drained.
	drained := 0
	if sigterm, ok := logTime(logs, "shutting down"); ok {
		for _, a := range l.Acks {
			if a.Target == urls[0] && a.At.After(sigterm) {
				drained++
			}
		}
	} else {
		t.Errorf("%s logs: got no \"shutting down\", want SIGTERM logged", victim)
	}
	verify(t, urls[1], l)
	t.Logf("podman stop took %s; %s; %d batches answered by %s after it logged \"shutting down\"", took.Round(time.Millisecond), l.Summary(), drained, victim)

	s.restart(t, victim)
	mustCall(t, http.MethodPost, s.url(t, victim)+"/v1/pools/stop/batches", userToken, `{"orders":[{"id":"after-restart"}]}`, http.StatusCreated, nil)
}

// logTime returns the time of the first log line with msg.
func logTime(logs, msg string) (time.Time, bool) {
	for line := range strings.SplitSeq(logs, "\n") {
		var e struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == msg {
			return e.Time, true
		}
	}
	return time.Time{}, false
}

// tail returns the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestKillLosesNothing SIGKILLs a replica (`podman kill`) while the clients
// spread their batches over all three: no acknowledged batch is lost, and
// the clients' retries on the other replicas complete the rest. Then a
// batch that Redis applies after its replica died: Redis paused, the batch
// sent to the victim, the victim killed, Redis resumed; its client retries
// on another replica with the same key and gets the recorded batch back
// (Idempotent-Replayed), not a second one. The killed replica starts again
// and serves.
func TestKillLosesNothing(t *testing.T) {
	s := shared(t)
	urls := s.urls(t)
	victim := s.replicas[1]
	s.keepRunning(t, victim)
	s.keepRunning(t, s.redis)
	setUpPool(t, urls[0], "kill", 5)

	targets := loadtest.NewTargets(urls...)
	l := startLoad(t, "kill", targets, false)
	l.WaitAcked(t, l.Acked()+150, 2*time.Minute)
	s.p.must(t, "kill", victim)
	targets.Set(urls[0], urls[2])
	l.WaitAcked(t, l.Acked()+100, 2*time.Minute)
	l.Finish(t)
	verify(t, urls[0], l)
	t.Logf("podman kill under load: %s", l.Summary())
	s.restart(t, victim)
	mustCall(t, http.MethodPost, s.url(t, victim)+"/v1/pools/kill/batches", userToken, `{"orders":[{"id":"after-restart"}]}`, http.StatusCreated, nil)

	// Applied, unanswered.
	// 64 orders with ids make a script call of more than bigCall bytes, so
	// it cannot be taken for the victim's readiness pings.
	const key = "kill.unanswered"
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf(`{"id":"unanswered.o%02d"}`, i)
	}
	body := `{"orders":[` + strings.Join(ids, ",") + `]}`
	victimURL := s.url(t, victim)
	redisPid := s.info(t, s.redis).State.Pid
	s.p.must(t, "pause", s.redis)
	sent := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, victimURL+"/v1/pools/kill/batches", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+userToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := httpClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = &unexpectedStatus{resp.StatusCode}
		}
		sent <- err
	}()
	// The batch reaches the victim, which sends it to Redis and waits: its
	// bytes wait in the paused Redis's socket.
	victimIP := s.info(t, victim).ip()
	for deadline := time.Now().Add(10 * time.Second); waitingOnRedis(t, redisPid)[victimIP] < bigCall; {
		if time.Now().After(deadline) {
			t.Fatalf("the batch sent to %s did not reach the paused Redis within 10s", victim)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.p.must(t, "kill", victim)
	if err := <-sent; err == nil || strings.Contains(err.Error(), "unexpected status") {
		t.Fatalf("the batch sent to %s before its SIGKILL: got %v, want no answer", victim, err)
	}
	s.p.must(t, "unpause", s.redis)
	status, data, h := call(t, http.MethodPost, urls[2]+"/v1/pools/kill/batches", userToken, body, key)
	if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry on %s with key %s: got %d, Idempotent-Replayed %q, %s; want 201 replayed (Redis applied the batch the killed replica sent)",
			s.replicas[2], key, status, h.Get("Idempotent-Replayed"), data)
	} else {
		t.Logf("a batch Redis applied for the killed %s: the retry with its key on %s got 201 Idempotent-Replayed", victim, s.replicas[2])
	}
	s.restart(t, victim)
}

type unexpectedStatus struct{ code int }

func (e *unexpectedStatus) Error() string { return "unexpected status " + http.StatusText(e.code) }

// TestRedisRestartKeepsOrders stops Redis (SIGTERM: it writes and fsyncs
// its AOF) while the clients send batches, removes its container, and
// starts a new one on the same volume: every batch acknowledged before is
// there, read from the AOF; the replicas answer 503 meanwhile and are
// ready again by themselves, without a restart.
func TestRedisRestartKeepsOrders(t *testing.T) {
	s := shared(t)
	urls := s.urls(t)
	setUpPool(t, urls[0], "redis", 5)
	l := startLoad(t, "redis", loadtest.NewTargets(urls...), false)
	l.WaitAcked(t, l.Acked()+150, 2*time.Minute)
	t.Cleanup(func() {
		// Whatever failed: a Redis again, on the volume.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.p.run(ctx, "container", "exists", s.redis); err != nil {
			_ = s.startRedis(ctx)
		}
	})
	s.keepRunning(t, s.redis)
	s.p.must(t, "stop", s.redis)
	before := l.Acked()
	s.p.must(t, "rm", s.redis)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.startRedis(ctx); err != nil {
		t.Fatal(err)
	}
	l.WaitAcked(t, l.Acked()+100, 2*time.Minute)
	l.Finish(t)
	for _, r := range s.replicas {
		if err := s.waitReady(ctx, r, 30*time.Second); err != nil {
			t.Error(err)
		}
	}
	info := s.p.must(t, "exec", s.redis, "redis-cli", "info", "persistence")
	if !strings.Contains(info, "aof_enabled:1") {
		t.Errorf("the new Redis: got %s, want aof_enabled:1", info)
	}
	verify(t, urls[0], l)
	t.Logf("Redis stopped after %d acknowledged batches and started again from its volume; %s", before, l.Summary())
}
