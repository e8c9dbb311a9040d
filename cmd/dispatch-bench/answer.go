package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
)

// http.ReadResponse builds a Header map of every line of an answer: each
// name checked and canonicalized (a string made for one it does not know,
// such as X-Request-Id), each value checked byte by byte and copied. Of
// that the tool reads three: the length, the encoding and Connection. At
// batch 1 the service's answer has two lines more than the thin service's
// (Location, X-Request-Id), which cost the tool some 4,000 instructions a
// request more against the service than against the thin service (callgrind,
// issue 21), work the service's own figures then paid for on two shared
// cores. plainAnswer reads the usual answer without the map; anything else
// is left to ReadResponse.

// maxPlainHeader bounds the header plainAnswer reads: it must be in the
// reader's buffer already (bufio's default size is 4 KiB).
const maxPlainHeader = 2048

// maxPlainBody bounds the body plainAnswer reads: one made room for before
// it has come.
const maxPlainBody = 1 << 20

// plainAnswer reads the answer at the head of r into resp when it is a
// plain one: a final status (2xx–5xx, not 204 or 304) of HTTP/1.1, with its
// whole header in r's buffer, a Content-Length and no Transfer-Encoding,
// to a request that is not HEAD. ok is false, and nothing is read from r,
// for any other answer; the caller then reads it with http.ReadResponse.
// keep is false when the server asked to close the connection.
func plainAnswer(r *bufio.Reader, req *http.Request, resp *bytes.Buffer) (status int, keep, ok bool, err error) {
	if req.Method == http.MethodHead {
		return 0, false, false, nil
	}
	buf, _ := r.Peek(min(r.Buffered(), maxPlainHeader))
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return 0, false, false, nil
	}
	head := buf[:end+2]
	// The status line: "HTTP/1.1 201 Created\r\n".
	line, head, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || len(line) > 12 && line[12] != ' ' {
		return 0, false, false, nil
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false, false, nil
		}
		status = status*10 + int(c-'0')
	}
	if status < 200 || status > 599 || status == http.StatusNoContent || status == http.StatusNotModified {
		return 0, false, false, nil
	}
	length, keep := -1, true
	for len(head) > 0 {
		line, head, _ = bytes.Cut(head, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 || name[len(name)-1] == ' ' || name[0] == ' ' || name[0] == '\t' {
			return 0, false, false, nil // no colon, a space before it, or a folded line
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length >= 0 || len(value) == 0 || len(value) > 7 {
				return 0, false, false, nil
			}
			length = 0
			for _, c := range value {
				if c < '0' || c > '9' {
					return 0, false, false, nil
				}
				length = length*10 + int(c-'0')
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, false, false, nil
		case bytes.EqualFold(name, []byte("Connection")):
			if !bytes.EqualFold(value, []byte("keep-alive")) {
				keep = false // close, or a list ReadResponse would read
			}
		}
	}
	if length < 0 || length > maxPlainBody {
		return 0, false, false, nil
	}
	if _, err := r.Discard(end + 4); err != nil {
		return 0, false, true, err
	}
	resp.Reset()
	resp.Grow(length)
	body := resp.AvailableBuffer()[:length]
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, false, true, err
	}
	resp.Write(body)
	return status, keep, true, nil
}
