package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one dispatcher service (or a load balancer in front of its
// replicas). It is safe for concurrent use.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	retry     RetryPolicy
	userAgent string
}

// Option changes a Client made by New.
type Option func(*Client)

// WithToken sends token as Authorization: Bearer on every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sends the requests with h instead of a client of its own
// (whose only timeout is the context's).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithRetry replaces DefaultRetry.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a Client of the service at baseURL (such as
// "http://127.0.0.1:8080"). It returns an error when baseURL is not an
// absolute http or https URL.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http://host[:port] or https://host[:port]", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c := &Client{base: u, http: &http.Client{}, retry: DefaultRetry, userAgent: "dispatcher-go-client"}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// retryMode says which failures of a call may be repeated.
type retryMode int

const (
	// retryAll repeats transport errors, 429 and 503: the operation is
	// idempotent, so a repeat of an applied request changes nothing.
	retryAll retryMode = iota
	// retryRefused repeats only answers that say nothing was applied
	// (429, 503 unavailable): a repeat of an applied delete would answer
	// 404, and of a bulk completion count differently.
	retryRefused
)

// call is one operation: its method, path, query, headers and body.
type call struct {
	method string
	path   string
	query  url.Values
	header http.Header
	body   any // marshalled to JSON; nil sends no body
	mode   retryMode
}

// response is a successful answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do runs c, repeating it as c.mode and the RetryPolicy allow, and decodes
// a 2xx body into out (unless out is nil). Any other answer is an *Error.
func (cl *Client) do(ctx context.Context, c call, out any) (*response, error) {
	var payload []byte
	if c.body != nil {
		var err error
		if payload, err = json.Marshal(c.body); err != nil {
			return nil, fmt.Errorf("client: encoding the request: %w", err)
		}
	}
	u := *cl.base
	u.Path += c.path
	u.RawPath = ""
	if len(c.query) > 0 {
		u.RawQuery = c.query.Encode()
	}
	target := u.String()
	for attempt := 0; ; attempt++ {
		resp, err := cl.once(ctx, c, target, payload)
		if err == nil {
			if out != nil && len(resp.body) > 0 {
				if err := json.Unmarshal(resp.body, out); err != nil {
					return nil, fmt.Errorf("client: decoding the %s %s answer: %w", c.method, c.path, err)
				}
			}
			return resp, nil
		}
		if ctx.Err() != nil || !retryable(err, c.mode) || attempt+1 >= cl.retry.attempts() {
			return nil, err
		}
		if err := cl.retry.wait(ctx, attempt, err); err != nil {
			return nil, err
		}
	}
}

// once sends the request one time. A non-2xx answer is an *Error; a
// failure to send or read is returned as it is.
func (cl *Client) once(ctx context.Context, c call, target string, payload []byte) (*response, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", cl.userAgent)
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	res, err := cl.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return &response{status: res.StatusCode, header: res.Header, body: data}, nil
	}
	var p *Problem
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
		p = new(Problem)
		if json.Unmarshal(data, p) != nil {
			p = nil
		}
	}
	return nil, newError(res.StatusCode, res.Header, data, p)
}

// retryable reports whether err may be repeated under mode.
func retryable(err error, mode retryMode) bool {
	var e *Error
	if !errors.As(err, &e) {
		return mode == retryAll // a transport error: the request may have been applied
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		return true
	case e.Status == http.StatusServiceUnavailable:
		// not-replicated: applied on the store's primary, not yet on a
		// replica; store-full with a batchId: a dispatch refused for want
		// of memory, which an attempt before may have applied.
		return mode == retryAll || (e.Type != ProblemOutcomeUnknown && e.Type != ProblemNotReplicated &&
			(e.Type != ProblemStoreFull || e.BatchID == ""))
	}
	return false
}

// get runs a GET of path into out.
func (cl *Client) get(ctx context.Context, path string, query url.Values, out any) error {
	_, err := cl.do(ctx, call{method: http.MethodGet, path: path, query: query}, out)
	return err
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// poolPath is the path of a pool, and of what is under it.
func poolPath(pool string, rest ...string) string {
	p := "/v1/pools/" + seg(pool)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var secs int64
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && secs >= 0 && fmt.Sprint(secs) == v {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
