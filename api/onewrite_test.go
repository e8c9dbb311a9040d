package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// countListener counts the writes of the connections it accepts.
type countListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countConn{Conn: c, writes: &l.writes}, nil
}

type countConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// serveOn serves h on a loopback listener, through api.Listener and
// api.ConnContext when held, and returns the address and the counter of
// the connections' writes.
func serveOn(t testing.TB, h http.Handler, held bool) (string, *countListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countListener{Listener: ln}
	srv := &http.Server{Handler: h}
	var served net.Listener = cl
	if held {
		served, srv.ConnContext = api.Listener(cl), api.ConnContext
	}
	go func() { _ = srv.Serve(served) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), cl
}

// rawClient sends requests over one kept-alive connection and returns each
// answer's bytes as they came.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawClient{c: c, br: bufio.NewReader(c)}
}

// do sends method path with body and returns the answer's status, and its
// bytes with the Date header taken out (it changes by the second).
func (rc *rawClient) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nX-Request-Id: fixed-1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		method, path, len(body), body)
	if _, err := io.WriteString(rc.c, req); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(rc.br, &raw)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, dateLine.ReplaceAllString(raw.String(), "")
}

var (
	dateLine = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)
	// createdAt is a dry run's time, now
	createdAt = regexp.MustCompile(`"createdAt":"[^"]*"`)
)

// TestLargeAnswerOneWrite: a batch's answer served through api.Listener
// leaves in one write of the connection, however large (net/http alone
// writes one of more than about 3.9 KB in two), with the same bytes as
// net/http alone writes, over one kept-alive connection that goes on
// serving.
func TestLargeAnswerOneWrite(t *testing.T) {
	ctx := context.Background()
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, _, err := svc.PutScale(ctx, "p", fmt.Sprintf("s-%d", i), dispatch.ScaleSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	h := api.New(svc, api.Options{})
	heldAddr, held := serveOn(t, h, true)
	plainAddr, _ := serveOn(t, h, false)
	hc, pc := dialRaw(t, heldAddr), dialRaw(t, plainAddr)
	for _, n := range []int{1, 60, 100, 1000, 2} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf(`{"id":"o-%d-%04d"}`, n, i)
		}
		body := `{"orders":[` + strings.Join(ids, ",") + `]}`
		before := held.writes.Load()
		code, got := hc.do(t, "POST", "/v1/pools/p/batches?dryRun=true", body)
		if w := held.writes.Load() - before; code != http.StatusOK || w != 1 {
			t.Fatalf("dry run of %d orders: status %d, %d writes, want 200 and 1 write", n, code, w)
		}
		_, want := pc.do(t, "POST", "/v1/pools/p/batches?dryRun=true", body)
		if got, want = createdAt.ReplaceAllString(got, ""), createdAt.ReplaceAllString(want, ""); got != want {
			t.Fatalf("dry run of %d orders: got\n%s\nwant (net/http alone)\n%s", n, got, want)
		}
		before = held.writes.Load()
		code, got = hc.do(t, "POST", "/v1/pools/p/batches", body)
		if w := held.writes.Load() - before; code != http.StatusCreated || w != 1 {
			t.Fatalf("batch of %d orders: status %d, %d writes, want 201 and 1 write: %s", n, code, w, got)
		}
		loc := regexp.MustCompile(`(?m)^Location: ([^\r]*)\r\n`).FindStringSubmatch(got)
		if loc == nil || !strings.Contains(got, `"orderId":"o-`) {
			t.Fatalf("batch of %d orders: no Location or assignments in\n%s", n, got)
		}
		before = held.writes.Load()
		code, got = hc.do(t, "GET", loc[1], "")
		if w := held.writes.Load() - before; code != http.StatusOK || w != 1 {
			t.Fatalf("GET %s: status %d, %d writes, want 200 and 1 write", loc[1], code, w)
		}
		if _, want := pc.do(t, "GET", loc[1], ""); got != want {
			t.Fatalf("GET %s: got\n%s\nwant (net/http alone)\n%s", loc[1], got, want)
		}
	}
}

// BenchmarkLargeAnswer sends batches of 100 orders over one kept-alive
// loopback connection to New's handler over a store that answers at once,
// served through api.Listener (held=true) or by net/http alone: the answer
// (about 4.7 KB) leaves in one write or two. cpu-ns/op is the CPU time of
// the whole process (server and client, user and system) per request.
func BenchmarkLargeAnswer(b *testing.B) {
	var body bytes.Buffer
	body.WriteString(`{"orders":[`)
	for i := range 100 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"id":"o-5f3a9c-%06d"}`, i)
	}
	body.WriteString(`]}`)
	req := fmt.Sprintf("POST /v1/pools/p/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", body.Len(), body.String())
	for _, held := range []bool{false, true} {
		b.Run(fmt.Sprintf("held=%v", held), func(b *testing.B) {
			h := api.New(dispatch.NewService(storetest.Instant{}, dispatch.Config{}), api.Options{})
			addr, cl := serveOn(b, h, held)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			start := cpuTime()
			writes := cl.writes.Load()
			for b.Loop() {
				if _, err := io.WriteString(c, req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusCreated {
					b.Fatal(resp.StatusCode, err)
				}
				_ = resp.Body.Close()
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(cl.writes.Load()-writes)/float64(b.N), "writes/op")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
