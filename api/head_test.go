package api_test

import (
	"net/http"
	"testing"
)

// TestHead: HEAD is answered wherever GET is, with GET's status and
// headers (Content-Length the length of GET's body); elsewhere 405, and
// Allow lists HEAD beside GET.
func TestHead(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	head := func(path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodHead, e.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	for _, c := range []struct {
		path   string
		status int
		ct     string
	}{
		{"/healthz", 200, "application/json"},
		{"/readyz", 200, "application/json"},
		{"/v1/pools/p", 200, "application/json"},
		{"/v1/pools/nope", 404, "application/problem+json"},
		{"/v1/pools/p/table", 200, "application/json"},
	} {
		resp := head(c.path)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.ct {
			t.Errorf("HEAD %s: %d %q, want %d %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.status, c.ct)
		}
		get := e.do(t, "GET", c.path, "")
		if resp.ContentLength != int64(len(get.body)) {
			t.Errorf("HEAD %s: Content-Length %d, GET's body has %d bytes", c.path, resp.ContentLength, len(get.body))
		}
	}
	resp := head("/v1/pools/p/batches")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("HEAD of a POST route: %d, Allow %q; want 405, POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	r := e.do(t, "POST", "/v1/pools/p", "{}")
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD, PUT, DELETE" {
		t.Errorf("POST of a pool: %d, Allow %q; want 405, GET, HEAD, PUT, DELETE", r.status, r.header.Get("Allow"))
	}
}
