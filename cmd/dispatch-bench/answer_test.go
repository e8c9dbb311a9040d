package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPlainAnswer holds plainAnswer to http.ReadResponse: an answer it
// reads gives the status, body and keep-alive ReadResponse gives, and the
// bytes after it stay in the reader; one it does not read leaves the reader
// as it was, for ReadResponse.
func TestPlainAnswer(t *testing.T) {
	const next = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	service := "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n" +
		"Location: /v1/pools/p1/batches/abc123def456-1:5167f27323ec\r\nX-Request-Id: 2a083c9fd38f-000019\r\n" +
		"Date: Wed, 02 Dec 2026 16:35:44 GMT\r\nContent-Length: 33\r\n\r\n" + `{"batchId":"x","assignments":[]}` + "\n"
	cases := []struct {
		name, answer string
		method       string
		plain        bool
	}{
		{"the service's", service, "POST", true},
		{"the thin service's", "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nDate: Wed, 02 Dec 2026 16:35:44 GMT\r\nContent-Length: 31\r\n\r\n" + `{"batchId":"thin-1","orders":1}`, "POST", true},
		{"a problem", "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nContent-Length: 13\r\n\r\n" + `{"type":"x"}` + "\n", "POST", true},
		{"lower-case names, no reason", "HTTP/1.1 200\r\ncontent-length: 2\r\nx-a:b\r\n\r\nok", "POST", true},
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "POST", true},
		{"close, other case", "HTTP/1.1 200 OK\r\nconnection: Close\r\nContent-Length: 2\r\n\r\nok", "POST", true},
		{"keep-alive", "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", "POST", true},
		{"empty body", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", "POST", true},
		{"spaces around the length", "HTTP/1.1 200 OK\r\nContent-Length:  2 \r\n\r\nok", "POST", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", "POST", false},
		{"no length", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nok", "POST", false},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", "POST", false},
		{"a length not a number", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", "POST", false},
		{"informational", "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "POST", false},
		{"no content", "HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n", "POST", false},
		{"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", "HEAD", false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "POST", false},
		{"a folded line", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok", "POST", false},
		{"a space before the colon", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", "POST", false},
		{"a status not a number", "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok", "POST", false},
		{"a header past the buffer", "HTTP/1.1 200 OK\r\nX-A: " + strings.Repeat("a", maxPlainHeader) + "\r\nContent-Length: 2\r\n\r\nok", "POST", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://x/", nil)
			r := bufio.NewReaderSize(strings.NewReader(tc.answer+next), 4096)
			if _, err := r.Peek(1); err != nil {
				t.Fatal(err)
			}
			before := r.Buffered()
			var resp bytes.Buffer
			status, keep, ok, err := plainAnswer(r, req, &resp)
			if ok != tc.plain {
				t.Fatalf("read as plain: %v, want %v", ok, tc.plain)
			}
			if !ok {
				if r.Buffered() != before {
					t.Fatalf("left %d bytes of %d", r.Buffered(), before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(tc.answer)), req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			if status != res.StatusCode || keep == res.Close || resp.String() != string(body) {
				t.Errorf("got %d, keep %v, body %q; ReadResponse %d, close %v, body %q", status, keep, resp.String(), res.StatusCode, res.Close, body)
			}
			if rest, _ := io.ReadAll(r); string(rest) != next {
				t.Errorf("left %q after the answer, want %q", rest, next)
			}
		})
	}
}

// TestPlainAnswerCutShort: a body shorter than its length is an error that
// says part of an answer came (not io.EOF, which conns.do takes for a
// connection closed before any answer).
func TestPlainAnswerCutShort(t *testing.T) {
	req, _ := http.NewRequest("POST", "http://x/", nil)
	r := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok"))
	_, _ = r.Peek(1)
	var resp bytes.Buffer
	_, _, ok, err := plainAnswer(r, req, &resp)
	if !ok || err != io.ErrUnexpectedEOF {
		t.Errorf("got ok %v, %v; want true, unexpected EOF", ok, err)
	}
}
