package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startRun runs the service on a free loopback port with args and env, and
// returns its address and log. The service stops when the test ends.
func startRun(t *testing.T, args []string, env map[string]string) (string, *logSink) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sink := &logSink{addr: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), envOf(env), sink, io.Discard)
	}()
	t.Cleanup(func() {
		stopRun(t, cancel, done, "run")
	})
	select {
	case addr := <-sink.addr:
		return addr, sink
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no listening line; log:\n%s", sink)
	}
	return "", nil
}

// get sends a GET with the given bearer token ("" for none) and returns
// the status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestRunWithTokens(t *testing.T) {
	addr, sink := startRun(t, []string{"-metrics-max-pools", "5"}, map[string]string{
		"DISPATCHER_ADMIN_TOKENS_FILE": writeFile(t, tokA+"\n"+tokB+"\n"),
		"DISPATCHER_CLIENT_TOKENS":     tokC,
	})
	base := "http://" + addr
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", http.StatusOK},
		{"/v1/pools", "", http.StatusUnauthorized},
		{"/v1/pools", tokC, http.StatusOK},
		{"/v1/pools", tokB, http.StatusOK},
		{"/metrics", tokC, http.StatusForbidden},
		{"/metrics", tokA, http.StatusOK},
	} {
		if got, body := get(t, base+c.path, c.token); got != c.want {
			t.Errorf("GET %s: got %d, want %d; body %s", c.path, got, c.want, body)
		}
	}
	if _, body := get(t, base+"/metrics", tokA); !strings.Contains(body, `dispatcher_http_requests_total{method="GET",route="/v1/pools",status="401"} 1`) {
		t.Errorf("the metrics do not count the 401:\n%s", body)
	}
	logs := sink.String()
	if !strings.Contains(logs, `"auth":"2 admin tokens, 1 client token"`) {
		t.Errorf("the start-up log does not describe the tokens:\n%s", logs)
	}
	if strings.Contains(logs, "NO TOKENS") {
		t.Errorf("a warning about missing tokens, with tokens:\n%s", logs)
	}
	for _, tok := range []string{tokA, tokB, tokC} {
		if strings.Contains(logs, tok) {
			t.Errorf("the log shows a token:\n%s", logs)
		}
	}
}

func TestRunWarnsWhenOpen(t *testing.T) {
	addr, sink := startRun(t, nil, nil)
	if got, _ := get(t, "http://"+addr+"/metrics", ""); got != http.StatusOK {
		t.Errorf("GET /metrics on an open server: got %d, want 200", got)
	}
	logs := sink.String()
	if !strings.Contains(logs, `"level":"WARN","msg":"NO TOKENS CONFIGURED: the API is open`) || !strings.Contains(logs, `"auth":"open: no tokens"`) {
		t.Errorf("want a loud warning that the API is open:\n%s", logs)
	}
}

// TestRunHeaderLimit checks the answer to headers over maxHeaderBytes:
// the http.Server's own 431, before the API sees the request.
func TestRunHeaderLimit(t *testing.T) {
	addr, _ := startRun(t, nil, nil)
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Filler", strings.Repeat("x", maxHeaderBytes+8<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("got %d, want 431", resp.StatusCode)
	}
	req.Header.Set("X-Filler", strings.Repeat("x", maxHeaderBytes/2))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("headers under the limit: got %d, want 200", resp.StatusCode)
	}
}

// TestRunReadHeaderTimeout checks that a client that sends its headers too
// slowly is cut off after -read-header-timeout.
func TestRunReadHeaderTimeout(t *testing.T) {
	addr, _ := startRun(t, []string{"-read-header-timeout", "200ms"}, nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if took := time.Since(start); err == nil || took > 3*time.Second {
		t.Errorf("got %q, %v after %s; want the connection closed after about 200ms", line, err, took)
	}
}
