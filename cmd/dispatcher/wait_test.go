package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// waitTimeout is the tests' DISPATCHER_REDIS_WAIT_TIMEOUT: long enough for
// a replica on a loaded test machine, short enough to wait for often.
const waitTimeout = time.Second

// waitEnv configures a service on the Redis at url that waits for
// replicas replicas, at most waitTimeout.
func waitEnv(url string, replicas int) map[string]string {
	return map[string]string{
		"DISPATCHER_REDIS_URL":           url,
		"DISPATCHER_REDIS_WAIT_REPLICAS": fmt.Sprint(replicas),
		"DISPATCHER_REDIS_WAIT_TIMEOUT":  waitTimeout.String(),
	}
}

// wantNotReplicated checks a 503 not-replicated answer that names a
// batch, and returns the batch id.
func wantNotReplicated(t *testing.T, what string, status int, m map[string]any) string {
	t.Helper()
	id, _ := m["batchId"].(string)
	if status != http.StatusServiceUnavailable || !strings.HasSuffix(fmt.Sprint(m["type"]), ":not-replicated") || id == "" {
		t.Fatalf("%s: %d %v, want 503 not-replicated with a batchId", what, status, m)
	}
	return id
}

// TestWaitReplicas runs a primary and a replica, a service on the primary
// that waits for one replica, and a service on the replica that only
// reads. A batch answered 201 is on the replica at once. A stalled replica
// (SIGSTOP: connected, silent) makes the batch 503 not-replicated after
// the wait timeout, though it is applied on the primary; the retry with
// the key, once the replica is back, replays it with 201.
func TestWaitReplicas(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	addr, _ := startRun(t, nil, waitEnv(primary.URL(), 1))
	raddr, _ := startRun(t, nil, redisEnv(replica.URL()))
	// A service on the primary that does not wait, as one that was started
	// without the setting, or a first attempt whose answer was lost.
	naddr, _ := startRun(t, nil, redisEnv(primary.URL()))
	base, rbase, nbase := "http://"+addr, "http://"+raddr, "http://"+naddr
	setUpPool(t, base, "p", 3)

	for i := range 20 {
		status, _, m := postBatch(t, base, "p", fmt.Sprint("k", i), fmt.Sprintf(`{"orders":[{"id":"o%d"}]}`, i))
		if status != http.StatusCreated {
			t.Fatalf("batch %d with the replica in sync: %d %v, want 201", i, status, m)
		}
		var b loadtest.BatchAnswer
		if got := getJSON(t, http.DefaultClient, rbase+"/v1/pools/p/batches/"+m["batchId"].(string), &b); got != http.StatusOK {
			t.Fatalf("batch %d on the replica right after its 201: %d, want 200: WAIT returned before the replica had it", i, got)
		}
	}

	// A WAIT on a connection that wrote nothing would count this replica
	// at once, however far behind: this is the case the store's mark is for.
	replica.Pause()
	body := `{"orders":[{"id":"stalled-1"},{"id":"stalled-2"}]}`
	start := time.Now()
	status, _, m := postBatch(t, base, "p", "stalled", body)
	took := time.Since(start)
	id := wantNotReplicated(t, "replica stalled", status, m)
	if took < waitTimeout {
		t.Errorf("503 after %s, want it after the %s wait timeout", took, waitTimeout)
	}
	var b loadtest.BatchAnswer
	if got := getJSON(t, http.DefaultClient, nbase+"/v1/pools/p/batches/"+id, &b); got != http.StatusOK {
		t.Fatalf("GET %s on the primary: %d, want 200: the batch is applied there", id, got)
	}
	if got := getJSON(t, http.DefaultClient, base+"/v1/pools/p/batches/"+id, &b); got != http.StatusServiceUnavailable {
		t.Fatalf("GET %s through the service that waits: %d, want 503: what it would show is on no replica", id, got)
	}
	// Every other write, and a read, waits as well: applied on the primary,
	// answered 503 not-replicated without a batchId.
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/pools/p/orders/o0/complete", `{}`},
		{"POST", "/v1/pools/p/orders/o1/cancel", ``},
		{"POST", "/v1/pools/p/completions", `{"orders":[{"id":"o2"},{"id":"o3"}]}`},
		{"PUT", "/v1/pools/p/scales/S9", `{}`},
		{"PUT", "/v1/pools/q", `{}`},
		{"GET", "/v1/pools/p/orders/o4", ``},
	} {
		st, m := request(t, c.method, base+c.path, c.body)
		if st != http.StatusServiceUnavailable || !strings.HasSuffix(fmt.Sprint(m["type"]), ":not-replicated") || m["batchId"] != nil {
			t.Errorf("%s %s with the replica stalled: %d %v, want 503 not-replicated without a batchId", c.method, c.path, st, m)
		}
	}
	if st, m := request(t, "GET", base+"/v1/pools/p/orders/o1", ""); st != http.StatusServiceUnavailable {
		t.Errorf("GET o1 after its cancel with the replica stalled: %d %v, want 503: the cancel is on no replica", st, m)
	}
	replica.Resume()
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/v1/pools/p/orders/o0/complete", `{}`, 200},
		{"POST", "/v1/pools/p/orders/o1/cancel", ``, 200},
		{"POST", "/v1/pools/p/completions", `{"orders":[{"id":"o2"},{"id":"o3"}]}`, 200},
		{"PUT", "/v1/pools/p/scales/S9", `{}`, 200},
		{"PUT", "/v1/pools/q", `{}`, 200},
	} {
		if st, m := request(t, c.method, base+c.path, c.body); st != c.want {
			t.Errorf("%s %s again, the replica back: %d %v, want %d", c.method, c.path, st, m, c.want)
		}
	}
	if st, m := request(t, "GET", rbase+"/v1/pools/p/orders/o1", ""); st != http.StatusOK || m["state"] != "cancelled" {
		t.Errorf("o1 on the replica after the retried cancel: %d %v, want cancelled", st, m)
	}
	status, h, m := postBatch(t, base, "p", "stalled", body)
	if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || m["batchId"] != id {
		t.Fatalf("retry with the key after the replica caught up: %d replayed=%q %v, want 201 replaying %s", status, h.Get("Idempotent-Replayed"), m, id)
	}
	if got := getJSON(t, http.DefaultClient, rbase+"/v1/pools/p/batches/"+id, &b); got != http.StatusOK {
		t.Fatalf("GET %s on the replica after the replayed 201: %d, want 200", id, got)
	}

	// A replay writes nothing, so its WAIT has no write of its own to count:
	// without the store's mark it would count the stalled replica. Here the
	// batch was applied through another service that does not wait (a
	// first attempt whose answer the client never got), and replayed here.
	replica.Pause()
	body = `{"orders":[{"id":"elsewhere"}]}`
	if status, _, m := postBatch(t, nbase, "p", "elsewhere", body); status != http.StatusCreated {
		t.Fatalf("batch through the service that does not wait: %d %v", status, m)
	}
	status, _, m = postBatch(t, base, "p", "elsewhere", body)
	wantNotReplicated(t, "replay with the replica stalled", status, m)
	replica.Resume()

	// Asking for more replicas than there are never succeeds.
	addr2, _ := startRun(t, nil, waitEnv(primary.URL(), 2))
	status, _, m = postBatch(t, "http://"+addr2, "p", "two", `{"orders":[{"id":"two"}]}`)
	wantNotReplicated(t, "two replicas wanted, one running", status, m)

	replica.Kill()
	status, _, m = postBatch(t, base, "p", "killed", `{"orders":[{"id":"killed"}]}`)
	wantNotReplicated(t, "replica killed", status, m)
}

// TestWaitWithoutReplica: with one replica wanted and none running, a
// batch is applied but answered 503 not-replicated naming it, within a
// bound; a dry run, which writes nothing but shows state that is on no
// replica, and a read, are 503 not-replicated too.
func TestWaitWithoutReplica(t *testing.T) {
	srv := redistest.Start(t)
	addr, _ := startRun(t, nil, waitEnv(srv.URL(), 1))
	base := "http://" + addr
	naddr, _ := startRun(t, nil, redisEnv(srv.URL()))
	setUpPool(t, "http://"+naddr, "p", 2)
	start := time.Now()
	status, _, m := postBatch(t, base, "p", "k", `{"orders":[{"id":"o1"},{"id":"o2"}]}`)
	id := wantNotReplicated(t, "no replica", status, m)
	if took := time.Since(start); took < waitTimeout || took > waitTimeout+5*time.Second {
		t.Errorf("503 after %s, want it after the %s wait timeout, within 5s more", took, waitTimeout)
	}
	var b loadtest.BatchAnswer
	if got := getJSON(t, http.DefaultClient, "http://"+naddr+"/v1/pools/p/batches/"+id, &b); got != http.StatusOK || len(b.Assignments) != 2 {
		t.Fatalf("GET %s: %d, want 200: the batch is applied on the primary", id, got)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/pools/p/batches?dryRun=true", `{"orders":[{"id":"o3"}]}`},
		{"GET", "/v1/pools/p/batches/" + id, ""},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(data), ":not-replicated") {
			t.Errorf("%s %s: %d %s, want 503 not-replicated", c.method, c.path, resp.StatusCode, data)
		}
	}
}

func TestParseConfigRedisWait(t *testing.T) {
	c, err := parseConfig(nil, envOf(nil), io.Discard)
	if err != nil || c.RedisWaitReplicas != 0 || c.RedisWaitTimeout != time.Second {
		t.Fatalf("defaults: %d, %s, %v; want 0 replicas, 1s", c.RedisWaitReplicas, c.RedisWaitTimeout, err)
	}
	env := map[string]string{
		"DISPATCHER_REDIS_URL":           "redis://127.0.0.1:6379",
		"DISPATCHER_REDIS_WAIT_REPLICAS": "1",
		"DISPATCHER_REDIS_WAIT_TIMEOUT":  "250ms",
	}
	c, err = parseConfig(nil, envOf(env), io.Discard)
	if err != nil || c.RedisWaitReplicas != 1 || c.RedisWaitTimeout != 250*time.Millisecond {
		t.Fatalf("from the environment: %d, %s, %v; want 1, 250ms", c.RedisWaitReplicas, c.RedisWaitTimeout, err)
	}
	c, err = parseConfig([]string{"-redis-wait-replicas", "2", "-redis-wait-timeout", "2s"}, envOf(env), io.Discard)
	if err != nil || c.RedisWaitReplicas != 2 || c.RedisWaitTimeout != 2*time.Second {
		t.Fatalf("flags over the environment: %d, %s, %v; want 2, 2s", c.RedisWaitReplicas, c.RedisWaitTimeout, err)
	}
	for _, bad := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"DISPATCHER_REDIS_WAIT_REPLICAS": "x"}, nil, "not an integer"},
		{nil, []string{"-redis-wait-replicas", "-1"}, "redis wait replicas -1"},
		{nil, []string{"-redis-wait-replicas", "101"}, "redis wait replicas 101"},
		{nil, []string{"-redis-wait-timeout", "0s"}, "redis wait timeout 0s"},
		{nil, []string{"-redis-wait-timeout", "3s"}, "redis wait timeout 3s"},
		{nil, []string{"-redis-wait-replicas", "1"}, "needs DISPATCHER_REDIS_URL"},
		{env, []string{"-request-timeout", "200ms"}, "shorter than the request timeout"},
	} {
		if _, err := parseConfig(bad.args, envOf(bad.env), io.Discard); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v %v: got %v, want an error with %q", bad.env, bad.args, err, bad.want)
		}
	}
}

// TestWaitCluster: on a Redis Cluster the WAIT goes to the primary of the
// pool's slot, after a mark in that slot. With every replica stalled, each
// batch, whichever primary holds its pool, is 503 not-replicated: a keyless
// WAIT sent by the Cluster client to a random node, on a connection with no
// writes, would count that node's stalled replica at once and answer 201.
func TestWaitCluster(t *testing.T) {
	nodes := redistest.StartClusterReplicas(t, 3, 1, 5*time.Second)
	env := waitEnv(redistest.ClusterURL(nodes), 1)
	env["DISPATCHER_REDIS_MODE"] = "cluster"
	addr, sink := startRun(t, nil, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", sink)
		}
	})
	base := "http://" + addr
	pools := []string{"eu", "us", "asia", "p3", "p4", "p5"}
	for _, p := range pools {
		setUpPool(t, base, p, 2)
		if status, _, m := postBatch(t, base, p, "in-sync", `{"orders":[{"id":"a"}]}`); status != http.StatusCreated {
			t.Fatalf("pool %s with the replicas in sync: %d %v, want 201", p, status, m)
		}
	}
	for _, r := range nodes[3:] { // redis-cli made the first three the primaries
		r.Pause()
	}
	ids := map[string]string{}
	for _, p := range pools {
		status, _, m := postBatch(t, base, p, "stalled", `{"orders":[{"id":"b"}]}`)
		ids[p] = wantNotReplicated(t, "pool "+p+" with its replica stalled", status, m)
	}
	for _, r := range nodes[3:] {
		r.Resume()
	}
	for _, p := range pools {
		status, h, m := postBatch(t, base, p, "stalled", `{"orders":[{"id":"b"}]}`)
		if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || m["batchId"] != ids[p] {
			t.Errorf("pool %s, retry after the replicas caught up: %d replayed=%q %v, want 201 replaying %s", p, status, h.Get("Idempotent-Replayed"), m, ids[p])
		}
	}
}

// request sends a JSON request and returns the status and the decoded
// body.
func request(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	status, data := call(t, method, url, body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return status, m
}
