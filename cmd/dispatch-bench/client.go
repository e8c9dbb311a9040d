package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"
)

// A load tool shares the machine with what it measures, so it must cost
// little per request. net/http's Transport hands every request to two
// goroutines of the connection's own (writer and reader) and back, which
// on these two-core machines made the tool spend more CPU per request
// than the server it drove. Here each sender (a run's worker, a scales
// registrar) owns its connections, one per replica, and writes the request
// and reads the answer on its own goroutine; net/http still writes the
// request (Request.Write) and parses the answer (ReadResponse).

// requester holds what every connection of a run shares.
type requester struct {
	// timeout bounds each request: connecting, sending and the whole answer.
	timeout time.Duration
	// Header values, built once and shared read-only by every request.
	contentType []string
	auth        []string
	// tls configures https connections; nil takes crypto/tls's defaults
	// (the system's roots).
	tls *tls.Config
}

func newRequester(cfg clientConfig) *requester {
	rq := &requester{timeout: cfg.Timeout, contentType: []string{"application/json"}}
	if cfg.Token != "" {
		rq.auth = []string{"Bearer " + cfg.Token}
	}
	return rq
}

// conns are one sender's kept-alive connections, by scheme and host. Only
// that sender's goroutine uses them.
type conns struct {
	rq   *requester
	open map[string]*keptConn
}

// keptConn is one connection with its buffers.
type keptConn struct {
	nc   net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
	used bool // an answer came on it already
}

// conns starts a sender's (empty) set of connections.
func (rq *requester) conns() *conns {
	return &conns{rq: rq, open: map[string]*keptConn{}}
}

// do sends body to url and reads the whole response into resp. It returns
// the status, or an error when no response came. An idemKey, when not
// empty, is sent as Idempotency-Key. A kept connection that the server has
// closed while it was idle is replaced before anything is sent on it; a
// request that may be repeated (PUT, or one with a key) is also sent again,
// once, on a new connection when a kept one turns out closed by the server
// after it was sent, before any answer.
func (c *conns) do(ctx context.Context, method, url string, body []byte, idemKey string, resp *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	// Set directly: the keys are canonical already, and the values shared.
	req.Header["Content-Type"] = c.rq.contentType
	if c.rq.auth != nil {
		req.Header["Authorization"] = c.rq.auth
	}
	if idemKey != "" {
		req.Header["Idempotency-Key"] = []string{idemKey}
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	// One deadline for the whole request, a new connection and a repeat
	// included, as http.Client.Timeout has it.
	deadline := time.Now().Add(c.rq.timeout)
	for {
		kc, err := c.conn(ctx, req, key, deadline)
		if err != nil {
			return 0, failure(ctx, err)
		}
		status, keep, err := kc.roundTrip(ctx, req, deadline, resp)
		if err == nil {
			kc.used = true
			if !keep {
				c.drop(key)
			}
			return status, nil
		}
		c.drop(key)
		if !kc.used || !repeatable(req) || !closedByServer(err) {
			return 0, failure(ctx, err)
		}
		if req.Body, err = req.GetBody(); err != nil {
			return 0, err
		}
	}
}

// conn returns the kept connection to key, dialling one by deadline when
// there is none, or when the kept one is closed or holds bytes no request
// asked for.
func (c *conns) conn(ctx context.Context, req *http.Request, key string, deadline time.Time) (*keptConn, error) {
	if kc := c.open[key]; kc != nil {
		if kc.r.Buffered() == 0 && open(kc.nc) {
			return kc, nil
		}
		c.drop(key)
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
	}
	addr := net.JoinHostPort(req.URL.Hostname(), port)
	d := &net.Dialer{Deadline: deadline, KeepAlive: 30 * time.Second}
	var nc net.Conn
	var err error
	if req.URL.Scheme == "https" {
		nc, err = (&tls.Dialer{NetDialer: d, Config: c.rq.tls}).DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	kc := &keptConn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
	c.open[key] = kc
	return kc, nil
}

// earlyAnswerWait bounds how long a request whose body could not be
// written in full waits for an answer the server sent before reading it
// all (a 413 for a body over its limit) and closing.
const earlyAnswerWait = 100 * time.Millisecond

// roundTrip writes req on kc and reads its answer into resp, by deadline
// and until ctx ends. keep is false when the connection must not be used
// again: the server asked to close it, or ctx ended during the exchange.
func (kc *keptConn) roundTrip(ctx context.Context, req *http.Request, deadline time.Time, resp *bytes.Buffer) (status int, keep bool, err error) {
	if err := kc.nc.SetDeadline(deadline); err != nil {
		return 0, false, err
	}
	// An ended ctx moves the deadline into the past, which ends a blocked
	// write or read at once; the connection is not kept after that.
	stop := context.AfterFunc(ctx, func() { _ = kc.nc.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() {
			keep = false
		}
	}()
	werr := req.Write(kc.w)
	if werr == nil {
		werr = kc.w.Flush()
	}
	if werr != nil {
		if wait := time.Now().Add(earlyAnswerWait); wait.Before(deadline) {
			_ = kc.nc.SetReadDeadline(wait)
		}
		if status, _, err := kc.readAnswer(req, resp); err == nil {
			return status, false, nil
		}
		return 0, false, werr
	}
	return kc.readAnswer(req, resp)
}

// readAnswer reads the answer to req from kc into resp, past any
// informational (1xx) answers. Its io.EOF means that not a byte of an
// answer came (ReadResponse would say io.ErrUnexpectedEOF).
func (kc *keptConn) readAnswer(req *http.Request, resp *bytes.Buffer) (status int, keep bool, err error) {
	if _, err := kc.r.Peek(1); err != nil {
		return 0, false, err
	}
	if status, keep, ok, err := plainAnswer(kc.r, req, resp); ok {
		return status, keep, err
	}
	for {
		res, err := http.ReadResponse(kc.r, req)
		if err != nil {
			return 0, false, err
		}
		if res.StatusCode >= 100 && res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
			res.Body.Close()
			continue
		}
		resp.Reset()
		_, err = resp.ReadFrom(res.Body)
		res.Body.Close()
		if err != nil {
			return 0, false, err
		}
		return res.StatusCode, !res.Close, nil
	}
}

// drop closes and forgets the connection to key.
func (c *conns) drop(key string) {
	if kc := c.open[key]; kc != nil {
		_ = kc.nc.Close()
		delete(c.open, key)
	}
}

// close closes every connection.
func (c *conns) close() {
	for key := range c.open {
		c.drop(key)
	}
}

// repeatable reports whether req may be sent twice: a PUT, or a request
// with an Idempotency-Key, as net/http's Transport has it.
func repeatable(req *http.Request) bool {
	return req.Method == http.MethodPut || req.Header["Idempotency-Key"] != nil
}

// closedByServer reports whether err is how a kept-alive connection that
// the server had closed fails: not a byte of an answer (io.EOF), or a
// reset.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// failure is the error of a request that got no answer: ctx's own error
// once ctx has ended (the request was cut short by it), else err.
func failure(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

// outcome names what a request that failed got, for the errors-by-status
// table: the status code, or timeout, canceled or transport when no
// response came.
func outcome(status int, err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return strconv.Itoa(status)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	default:
		return "transport"
	}
}

// failureKind names a request that did not succeed for the report: outcome's
// word, and for an answer its problem type's slug when body is a problem of
// the service (503 unavailable and 503 outcome-unknown mean different
// things: the second batch may have been applied).
func failureKind(status int, err error, body []byte) string {
	o := outcome(status, err)
	if err != nil {
		return o
	}
	if slug := problemSlug(body); slug != "" {
		return o + " " + slug
	}
	return o
}

// problemSlug returns the slug of a problem+json body's type
// ("urn:dispatcher:problem:outcome-unknown" gives "outcome-unknown"), or "".
func problemSlug(body []byte) string {
	const key = `"type":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return ""
	}
	t := body[i+len(key):]
	end := bytes.IndexByte(t, '"')
	if end < 0 {
		return ""
	}
	t = t[:end]
	if j := bytes.LastIndexAny(t, ":/"); j >= 0 {
		t = t[j+1:]
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return ""
		}
	}
	return string(t)
}

// ok reports whether a request succeeded.
func ok(status int, err error) bool { return err == nil && status >= 200 && status < 300 }

// pause waits d, or less if ctx ends first; workers pause after a failed
// connection so that a dead target is not hammered in a tight loop.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
