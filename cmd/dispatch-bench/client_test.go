package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer answers every request 201 with its method and counts the
// connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, r.Method)
		}
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &n
}

func testConns(timeout time.Duration) *conns {
	return newRequester(clientConfig{Timeout: timeout}).conns()
}

// send does one request and fails the test unless it got want.
func send(t *testing.T, c *conns, method, url, key string, want int) {
	t.Helper()
	var resp bytes.Buffer
	status, err := c.do(context.Background(), method, url, []byte(`{}`), key, &resp)
	if err != nil || status != want {
		t.Fatalf("%s %s: got %d, %v; want %d", method, url, status, err, want)
	}
	if resp.String() != method {
		t.Fatalf("%s %s: body %q, want %q", method, url, resp.String(), method)
	}
}

func TestConnsKeepOneConnectionPerTarget(t *testing.T) {
	a, na := countingServer(t, nil)
	b, nb := countingServer(t, nil)
	c := testConns(5 * time.Second)
	defer c.close()
	for range 20 {
		send(t, c, "POST", a.URL+"/x", "", 201)
		send(t, c, "PUT", b.URL+"/y", "", 201)
	}
	if na.Load() != 1 || nb.Load() != 1 {
		t.Errorf("connections: got %d and %d, want 1 each", na.Load(), nb.Load())
	}
}

func TestConnsRedialWhenTheServerCloses(t *testing.T) {
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, r.Method)
	})
	c := testConns(5 * time.Second)
	for range 3 {
		send(t, c, "POST", srv.URL, "", 201)
	}
	if n.Load() != 3 {
		t.Errorf("connections: got %d, want 3 (one per answer with Connection: close)", n.Load())
	}
	if len(c.open) != 0 {
		t.Errorf("kept %d connections after Connection: close, want 0", len(c.open))
	}
}

func TestConnsReplaceAConnectionClosedWhileIdle(t *testing.T) {
	var posts atomic.Int64
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, r.Method)
	})
	c := testConns(5 * time.Second)
	defer c.close()
	send(t, c, "PUT", srv.URL, "", 201)
	srv.CloseClientConnections() // as an idle timeout or a restart would
	send(t, c, "POST", srv.URL, "", 201)
	if n.Load() != 2 || posts.Load() != 1 {
		t.Errorf("got %d connections and %d POSTs, want 2 and 1", n.Load(), posts.Load())
	}
}

func TestConnsRepeatOnlyWhatMayBeRepeated(t *testing.T) {
	var drop atomic.Bool
	seen := map[string]int{}
	var mu sync.Mutex
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen[r.Method+" "+r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		if drop.CompareAndSwap(true, false) {
			// the request arrived; the connection closes without an answer
			nc, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				nc.Close()
			}
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, r.Method)
	})
	c := testConns(5 * time.Second)
	defer c.close()
	var resp bytes.Buffer

	send(t, c, "GET", srv.URL, "", 201) // a kept connection
	drop.Store(true)
	send(t, c, "PUT", srv.URL, "", 201)
	drop.Store(true)
	send(t, c, "POST", srv.URL, "k-1", 201)
	drop.Store(true)
	status, err := c.do(context.Background(), "POST", srv.URL, []byte(`{}`), "", &resp)
	if got := outcome(status, err); got != "transport" {
		t.Errorf("POST without a key: got %q (%v), want transport", got, err)
	}
	drop.Store(true) // on a new connection: never repeated
	status, err = c.do(context.Background(), "PUT", srv.URL, []byte(`{}`), "", &resp)
	if got := outcome(status, err); got != "transport" {
		t.Errorf("PUT on a new connection: got %q (%v), want transport", got, err)
	}
	want := map[string]int{"GET ": 1, "PUT ": 3, "POST k-1": 2, "POST ": 1}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("requests the server saw: got %v, want %v", seen, want)
	}
}

func TestConnsEarlyAnswer(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge) // the body unread
	})
	c := testConns(5 * time.Second)
	defer c.close()
	var resp bytes.Buffer
	status, err := c.do(context.Background(), "POST", srv.URL, make([]byte, 32<<20), "", &resp)
	if err != nil || status != http.StatusRequestEntityTooLarge {
		t.Errorf("got %d, %v; want 413", status, err)
	}
}

func TestConnsSkipInformationalAnswers(t *testing.T) {
	srv, n := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</x>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, r.Method)
	})
	c := testConns(5 * time.Second)
	defer c.close()
	for range 3 {
		send(t, c, "POST", srv.URL, "", 201)
	}
	if n.Load() != 1 {
		t.Errorf("connections: got %d, want 1", n.Load())
	}
}

func TestConnsTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	c := testConns(100 * time.Millisecond)
	defer c.close()
	var resp bytes.Buffer
	status, err := c.do(context.Background(), "POST", srv.URL, nil, "", &resp)
	if got := outcome(status, err); got != "timeout" {
		t.Errorf("got %q (%v), want timeout", got, err)
	}
}

func TestConnsCanceled(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	c := testConns(time.Hour)
	defer c.close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	var resp bytes.Buffer
	status, err := c.do(ctx, "POST", srv.URL, nil, "", &resp)
	if !errors.Is(err, context.Canceled) || outcome(status, err) != "canceled" {
		t.Errorf("got %d, %v; want canceled", status, err)
	}
}

func TestConnsHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, r.Method)
	}))
	defer srv.Close()
	rq := newRequester(clientConfig{Timeout: 5 * time.Second})
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	rq.tls = srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	rq.tls.RootCAs = roots
	c := rq.conns()
	defer c.close()
	send(t, c, "POST", srv.URL, "", 201)
	send(t, c, "PUT", srv.URL, "", 201)
	if len(c.open) != 1 {
		t.Errorf("kept %d connections, want 1", len(c.open))
	}
}
