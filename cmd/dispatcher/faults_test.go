package main

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// The fault tests of issue 5: real dispatcher processes and a real
// redis-server on loopback, clients that retry with their Idempotency-Key,
// and after each fault the same check (verify): every acknowledged batch
// recorded exactly once, counts equal records.

func redisEnv(url string) map[string]string {
	return map[string]string{"DISPATCHER_REDIS_URL": url}
}

// TestReplicaKilledMidLoad runs three dispatcher processes on one Redis
// and SIGKILLs one while twelve clients send batches to all three. The
// victim reaches Redis through a proxy that delays its replies, so that at
// the kill it has batches in flight that Redis has applied but it has not
// answered: their clients retry on another replica with the same key and
// get the recorded batch back (Idempotent-Replayed), not a second one.
func TestReplicaKilledMidLoad(t *testing.T) {
	srv := redistest.Start(t)
	slow := redistest.NewProxy(t, srv.Addr(), "")
	bin := buildDispatcher(t)
	victim := startProc(t, bin, "replica0", redisEnv(slow.URL()))
	r1 := startProc(t, bin, "replica1", redisEnv(srv.URL()))
	r2 := startProc(t, bin, "replica2", redisEnv(srv.URL()))
	setUpPool(t, r1.URL, "p", 5)
	slow.SetDelay(300 * time.Millisecond)

	const workers, batches = 12, 30
	targets := []string{victim.URL, r1.URL, r2.URL}
	l := loadtest.Start(t, loadtest.Spec{Pool: "p", Prefix: "a", Workers: workers, Batches: batches, Orders: loadtest.UpTo(8), Keys: true,
		Targets: func() []string { return targets }, GiveUp: 30 * time.Second})
	l.WaitAcked(t, workers*batches/3, 60*time.Second)
	// The workers move nearly in step, and the count is reached just as
	// they send their next batches to the victim: let those reach Redis,
	// whose replies the proxy then holds for the rest of the 300ms.
	time.Sleep(100 * time.Millisecond)
	before := l.Acked()
	victim.kill()
	killed := time.Now()
	l.Wait(t)
	verify(t, r2.URL, l)

	orders := 0
	for _, a := range l.Acks {
		orders += len(a.Orders)
	}
	t.Logf("%d batches (%d orders) acknowledged, %d before the SIGKILL; %d replayed by key after the victim applied them unanswered; "+
		"load took %s, %s after the kill; failed attempts: %s",
		len(l.Acks), orders, before, l.Replays(), time.Since(l.Start).Round(time.Millisecond),
		time.Since(killed).Round(time.Millisecond), l.FailureSummary())
	if l.Replays() == 0 {
		t.Errorf("no retry was a replay: the victim had no applied, unanswered batch at the kill, so the test proved less than it claims")
	}
}

// TestRedisKilledAndRestarted SIGKILLs a Redis with appendfsync always
// under load, keeps it down a second, and starts it again from its AOF. Every
// batch acknowledged before the kill is there afterwards, the clients'
// retries with their keys complete every other batch exactly once, and the
// replicas are ready again within seconds of Redis's return.
func TestRedisKilledAndRestarted(t *testing.T) {
	srv := redistest.StartAOF(t)
	bin := buildDispatcher(t)
	r0 := startProc(t, bin, "replica0", redisEnv(srv.URL()))
	r1 := startProc(t, bin, "replica1", redisEnv(srv.URL()))
	setUpPool(t, r0.URL, "p", 5)

	const workers, batches = 8, 60
	targets := []string{r0.URL, r1.URL}
	l := loadtest.Start(t, loadtest.Spec{Pool: "p", Prefix: "b", Workers: workers, Batches: batches, Orders: loadtest.UpTo(8), Keys: true,
		Targets: func() []string { return targets }, GiveUp: 60 * time.Second})
	l.WaitAcked(t, workers*batches/3, 60*time.Second)
	killAt := time.Now()
	srv.Kill()
	l.Mu.Lock()
	var before []loadtest.Ack
	for _, a := range l.Acks {
		if a.At.Before(killAt) {
			before = append(before, a)
		}
	}
	l.Mu.Unlock()
	time.Sleep(time.Second)
	for _, r := range []*proc{r0, r1} {
		resp, err := http.Get(r.URL + "/readyz")
		if err != nil {
			t.Fatalf("readyz while Redis is down: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s readyz while Redis is down: %d, want 503", r.name, resp.StatusCode)
		}
	}
	down := l.Acked()

	srv.Restart() // returns once Redis has loaded its AOF and answers PING
	back := time.Now()
	ready := make([]time.Duration, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, r := range []*proc{r0, r1} {
		// Generous: the claim is "within seconds", not a latency target.
		wg.Go(func() { ready[i], errs[i] = readyWithin(r.URL, 15*time.Second) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("after Redis returned: %v", err)
	}
	l.WaitAcked(t, down+1, 15*time.Second)
	firstAck := time.Since(back)
	l.Wait(t)

	// The batches acknowledged before the kill, checked on their own
	// first: the durability claim of appendfsync always.
	lost := 0
	c := &http.Client{Timeout: 10 * time.Second}
	for _, a := range before {
		var b loadtest.BatchAnswer
		if getJSON(t, c, r1.URL+"/v1/pools/p/batches/"+a.BatchID, &b) != http.StatusOK {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d batches acknowledged before the SIGKILL are lost", lost, len(before))
	}
	verify(t, r1.URL, l)
	t.Logf("%d batches acknowledged, %d before the SIGKILL of Redis, lost 0 of them: %v; %d acknowledged while Redis was down (in flight at the kill); "+
		"after Redis returned: readyz 200 in %v, first 201 in %s; %d outcome-unknown answers; failed attempts: %s",
		len(l.Acks), len(before), lost == 0, down-int64(len(before)), ready, firstAck.Round(time.Millisecond),
		len(l.Unknown), l.FailureSummary())
}

// TestDroppedRepliesHTTP loses Redis's replies to dispatch scripts after
// they ran, behind one dispatcher: a reply go-redis's retry makes up for is
// a plain 201; one lost on every retry, or never sent, is a 503
// outcome-unknown naming a batch that GET finds, and the retry with the
// key replays it. Then a load with replies dropped at random: every batch
// once.
func TestDroppedRepliesHTTP(t *testing.T) {
	srv := redistest.Start(t)
	px := redistest.NewProxy(t, srv.Addr(), "fcall")
	addr, _ := startRun(t, []string{"-request-timeout", "1s"}, redisEnv(px.URL()))
	base := "http://" + addr
	setUpPool(t, base, "p", 3)
	post := func(key, body string) (int, http.Header, map[string]any) {
		t.Helper()
		return postBatch(t, base, "p", key, body)
	}
	if status, _, m := post("warm", `{"orders":[{"id":"warm"}]}`); status != http.StatusCreated {
		t.Fatalf("warm-up batch: %d %v", status, m)
	}

	px.DropNext(1)
	if status, h, m := post("k1", `{"orders":[{"id":"o1"},{"id":"o2"}]}`); status != http.StatusCreated || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("reply dropped once: %d %v %v, want a plain 201 (go-redis re-sent the script)", status, h, m)
	}

	for _, c := range []struct {
		name string
		lose func()
	}{
		{"dropped on every retry", func() { px.DropNext(3) }}, // the call and go-redis's two retries
		{"held past the request timeout", func() { px.HoldNext(1) }},
	} {
		key := "k-" + strings.ReplaceAll(c.name, " ", "-")
		body := `{"orders":[{"id":"` + key + `-1"},{"id":"` + key + `-2"}]}`
		c.lose()
		status, _, m := post(key, body)
		id, _ := m["batchId"].(string)
		if status != http.StatusServiceUnavailable || !strings.HasSuffix(m["type"].(string), ":outcome-unknown") || id == "" {
			t.Fatalf("%s: %d %v, want 503 outcome-unknown with a batchId", c.name, status, m)
		}
		var b loadtest.BatchAnswer
		if got := getJSON(t, http.DefaultClient, base+"/v1/pools/p/batches/"+id, &b); got != http.StatusOK || len(b.Assignments) != 2 {
			t.Fatalf("%s: GET the batch named by the 503: %d, want 200: it was applied", c.name, got)
		}
		status, h, m := post(key, body)
		if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || m["batchId"] != id {
			t.Fatalf("%s: retry with the key: %d replayed=%q batch %v, want 201 replaying %s", c.name, status, h.Get("Idempotent-Replayed"), m["batchId"], id)
		}
	}

	setUpPool(t, base, "q", 3)
	px.DropNext(40)
	l := loadtest.Start(t, loadtest.Spec{Pool: "q", Prefix: "c", Workers: 6, Batches: 20, Orders: loadtest.UpTo(6), Keys: true,
		Targets: func() []string { return []string{base} }, GiveUp: 30 * time.Second})
	l.Wait(t)
	px.Heal() // the checks read through the proxy too
	verify(t, base, l)
	t.Logf("%d replies lost in all; the load: %d batches acknowledged, %d replays, failed attempts: %s",
		px.Dropped(), len(l.Acks), l.Replays(), l.FailureSummary())
}
