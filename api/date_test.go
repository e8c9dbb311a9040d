package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// TestDateHeader: dateHeader gives http.TimeFormat's value of the time in
// UTC, the same value (made once) within a second and a new one in the
// next; and a batch's answer on the wire has one Date line, of the time
// it was answered.
func TestDateHeader(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 16, 35, 44, 100e6, time.FixedZone("x", 5*3600))
	for _, tc := range []time.Time{t0, t0.Add(899 * time.Millisecond), t0.Add(900 * time.Millisecond), t0.Add(-time.Second), t0} {
		if got, want := dateHeader(tc), tc.UTC().Format(http.TimeFormat); len(got) != 1 || got[0] != want {
			t.Errorf("dateHeader(%v) = %q, want %q", tc, got, want)
		}
	}
	if a, b := dateHeader(t0), dateHeader(t0.Add(time.Millisecond)); &a[0] != &b[0] {
		t.Error("two values made within one second")
	}

	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	ctx := context.Background()
	if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.PutScale(ctx, "p", "s-1", dispatch.ScaleSpec{}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(svc, Options{})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 3 {
		body := fmt.Sprintf(`{"orders":[{"id":"o-%d"}]}`, i)
		before := time.Now().Truncate(time.Second)
		fmt.Fprintf(c, "POST /v1/pools/p/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		var raw strings.Builder
		resp, err := http.ReadResponse(bufio.NewReader(io.TeeReader(br, &raw)), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		after := time.Now()
		if resp.StatusCode != http.StatusCreated || len(resp.Header["Date"]) != 1 || strings.Count(raw.String(), "\r\nDate: ") != 1 {
			t.Fatalf("answer %d: status %d, Date lines %q, want 201 and one:\n%s", i, resp.StatusCode, resp.Header["Date"], raw.String())
		}
		d, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil || d.Before(before) || d.After(after) {
			t.Errorf("answer %d: Date %q (%v), want between %v and %v", i, resp.Header.Get("Date"), err, before, after)
		}
	}
}
