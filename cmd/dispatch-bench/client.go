package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
)

// requester sends the requests of one run through one http.Client, whose
// transport keeps an idle connection per worker and host, so that every
// request after the first of a worker reuses a kept-alive connection.
type requester struct {
	client *http.Client
	// Header values, built once and shared read-only by every request.
	contentType []string
	auth        []string
}

func newRequester(cfg clientConfig) *requester {
	tr := &http.Transport{
		Proxy:               nil, // a benchmark measures the target, never a proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        0, // no limit across hosts
		MaxIdleConnsPerHost: cfg.Concurrency + 4,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
		DisableCompression:  true,
	}
	rq := &requester{
		client:      &http.Client{Transport: tr, Timeout: cfg.Timeout},
		contentType: []string{"application/json"},
	}
	if cfg.Token != "" {
		rq.auth = []string{"Bearer " + cfg.Token}
	}
	return rq
}

// do sends body to url and reads the whole response into resp (which keeps
// the connection reusable). It returns the status, or an error when no
// response came. An idemKey, when not empty, is sent as Idempotency-Key.
func (rq *requester) do(ctx context.Context, method, url string, body []byte, idemKey string, resp *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	// Set directly: the keys are canonical already, and the values shared.
	req.Header["Content-Type"] = rq.contentType
	if rq.auth != nil {
		req.Header["Authorization"] = rq.auth
	}
	if idemKey != "" {
		req.Header["Idempotency-Key"] = []string{idemKey}
	}
	res, err := rq.client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Reset()
	_, err = resp.ReadFrom(res.Body)
	res.Body.Close()
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// close drops the idle connections.
func (rq *requester) close() { rq.client.CloseIdleConnections() }

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
