//go:build image

package imagetest_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nginxLog is one line of nginx.conf's JSON access log.
type nginxLog struct {
	RequestID      string `json:"request_id"`
	Method         string `json:"method"`
	Status         int    `json:"status"`
	Upstream       string `json:"upstream"`
	UpstreamStatus string `json:"upstream_status"`
}

// nginxLogs returns nginx's access log lines by request id.
func (s *stack) nginxLogs(tb testing.TB) map[string]nginxLog {
	tb.Helper()
	out := s.p.must(tb, "logs", s.nginx)
	m := map[string]nginxLog{}
	for line := range strings.SplitSeq(out, "\n") {
		var l nginxLog
		if json.Unmarshal([]byte(line), &l) == nil && l.RequestID != "" {
			m[l.RequestID] = l
		}
	}
	return m
}

// replicaIPs maps the replicas' addresses (IP:8080) to their names.
func (s *stack) replicaIPs(tb testing.TB) map[string]string {
	tb.Helper()
	m := map[string]string{}
	for _, r := range s.replicas {
		m[s.info(tb, r).ip()+":8080"] = r
	}
	return m
}

// postVia posts a batch through base with a request id and returns the
// status.
func postVia(tb testing.TB, base, pool, requestID, body string) (int, error) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/pools/"+pool+"/batches", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+userToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", requestID)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestNginxSpreads posts batches through nginx (compose.yaml's published
// port) and reads in nginx's access log which replica answered each: all
// three take a share, the replicas that the fault tests restarted
// included, and each batch went to one replica.
func TestNginxSpreads(t *testing.T) {
	s := shared(t)
	s.refreshNginx(t)
	base := s.nginxURL()
	setUpPool(t, base, "nginx", 3)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	const n = 30
	for i := range n {
		if status, err := postVia(t, base, "nginx", fmt.Sprintf("spread-%s-%d", run, i), `{"orders":[{},{}]}`); err != nil || status != http.StatusCreated {
			t.Fatalf("batch %d through nginx: got %d %v, want 201", i, status, err)
		}
	}
	logs := s.nginxLogs(t)
	ips := s.replicaIPs(t)
	per := map[string]int{}
	for i := range n {
		l, ok := logs[fmt.Sprintf("spread-%s-%d", run, i)]
		if !ok {
			t.Fatalf("nginx log: got no line for batch %d, want one", i)
		}
		name, ok := ips[l.Upstream]
		if !ok {
			t.Errorf("batch %d: nginx sent it to %q, want one replica of %v", i, l.Upstream, ips)
		}
		per[name]++
	}
	for _, r := range s.replicas {
		if per[r] == 0 {
			t.Errorf("replica %s: got no batch of %d through nginx, want a share", r, n)
		}
	}
	t.Logf("%d batches through nginx: %v", n, per)
}

// TestNginxNeverResendsPost kills the replica that holds a batch nginx
// sent it (Redis paused, so the batch waits there), while the two others
// run: nginx answers 502 and does not send the batch to another replica,
// for it may have been applied (here it was: Redis had it). Its log names
// one upstream, and the pool holds the batch's orders at most once; the
// orders have no ids, so a resent batch would add a second set.
func TestNginxNeverResendsPost(t *testing.T) {
	s := shared(t)
	base := s.nginxURL()
	setUpPool(t, base, "resend", 2)
	for _, r := range s.replicas {
		s.keepRunning(t, r)
	}
	s.keepRunning(t, s.redis)
	redisPid := s.info(t, s.redis).State.Pid
	s.p.must(t, "pause", s.redis)
	before := waitingOnRedis(t, redisPid)

	// 64 orders without ids: the service names them, so the script call
	// that waits in Redis's socket is several KiB, far above the probes
	// and ticks that the replicas also send while Redis is paused.
	const n = 64
	body := `{"orders":[{}` + strings.Repeat(`,{}`, n-1) + `]}`
	id := "resend-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		status, err := postVia(t, base, "resend", id, body)
		done <- result{status, err}
	}()
	// The replica holding the batch is the one whose connection to the
	// paused Redis has bytes waiting.
	var holder string
	ips := s.replicaIPs(t)
	deadline := time.Now().Add(5 * time.Second)
	for holder == "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		for ip, queued := range waitingOnRedis(t, redisPid) {
			if queued >= before[ip]+bigCall && ips[ip+":8080"] != "" {
				holder = ips[ip+":8080"]
			}
		}
	}
	if holder == "" {
		s.p.must(t, "unpause", s.redis)
		t.Fatalf("no replica's connection to the paused Redis has the batch waiting (before: %v)", before)
	}
	s.p.must(t, "kill", holder)
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer through nginx 30s after the replica holding the batch was killed")
	}
	s.p.must(t, "unpause", s.redis)
	if res.err != nil || res.status != http.StatusBadGateway {
		t.Errorf("the batch through nginx: got %d %v, want 502 (its replica died, nginx does not resend a POST)", res.status, res.err)
	}
	l, ok := s.nginxLogs(t)[id]
	switch {
	case !ok:
		t.Errorf("nginx log: got no line for %s, want one", id)
	case ips[l.Upstream] != holder:
		t.Errorf("nginx log for the batch: upstream %q (statuses %q), want only %s, the replica killed", l.Upstream, l.UpstreamStatus, holder)
	}
	// Redis runs what the dead replica had sent it once it resumes; a
	// resend would add n more orders.
	time.Sleep(time.Second)
	var scales struct {
		Scales []struct {
			Outstanding int `json:"outstanding"`
		} `json:"scales"`
	}
	other := s.replicas[0]
	if other == holder {
		other = s.replicas[1]
	}
	mustCall(t, http.MethodGet, s.url(t, other)+"/v1/pools/resend/scales", userToken, "", http.StatusOK, &scales)
	total := 0
	for _, sc := range scales.Scales {
		total += sc.Outstanding
	}
	if total > n {
		t.Errorf("pool resend: %d orders, want at most the batch's %d (nginx resent it)", total, n)
	}
	t.Logf("killed %s holding the batch: nginx answered %d, upstream %q; the pool holds %d of its %d orders (applied by Redis from the dead replica's connection)", holder, res.status, l.Upstream, total, n)
}

// bigCall is the least number of bytes waiting in a paused Redis's socket
// that the tests take for a batch's script call: the replicas' own
// traffic (readiness pings, health ticks) is a few hundred bytes at most.
const bigCall = 1024

// waitingOnRedis returns, by client address, how many bytes wait unread
// on its connections to the Redis process pid, from /proc/PID/net/tcp of
// its network namespace.
func waitingOnRedis(tb testing.TB, pid int) map[string]uint64 {
	tb.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]uint64{}
	for line := range strings.SplitSeq(string(data), "\n") {
		// sl local rem st tx_queue:rx_queue ...
		f := strings.Fields(line)
		if len(f) < 5 || f[3] != "01" || !strings.HasSuffix(f[1], ":18EB") { // ESTABLISHED, local port 6379
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseUint(rx, 16, 64)
		if err != nil || n == 0 {
			continue
		}
		host, _, _ := strings.Cut(f[2], ":")
		b, err := hex.DecodeString(host)
		if err != nil || len(b) != 4 {
			continue
		}
		m[net.IPv4(b[3], b[2], b[1], b[0]).String()] += n
	}
	return m
}
