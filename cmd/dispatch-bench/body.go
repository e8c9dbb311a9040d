package main

import (
	"bytes"
	"strconv"
)

// Request bodies are appended by hand into per-worker buffers: the ids are
// made of [A-Za-z0-9._:-] only, so nothing needs escaping, and the hot loop
// neither reflects nor allocates.

// appendOrders appends {"orders":[{"id":"<prefix><first>"},…]} for the n
// ids from first on: a batch, and equally the completions of that batch.
func appendOrders(dst []byte, prefix string, first uint64, n int) []byte {
	dst = append(dst, `{"orders":[`...)
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":"`...)
		dst = append(dst, prefix...)
		dst = strconv.AppendUint(dst, first+uint64(i), 10)
		dst = append(dst, `"}`...)
	}
	return append(dst, "]}"...)
}

// appendAnonymousOrders appends {"orders":[{},…]} with n orders without
// ids, for the service to name.
func appendAnonymousOrders(dst []byte, n int) []byte {
	dst = append(dst, `{"orders":[`...)
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "{}"...)
	}
	return append(dst, "]}"...)
}

var orderIDKey = []byte(`"orderId"`)

// appendCompletions appends {"orders":[{"id":…},…]} naming every orderId of
// a batch response, and returns how many it named.
func appendCompletions(dst, batch []byte) ([]byte, int) {
	dst = append(dst, `{"orders":[`...)
	n := 0
	for {
		id, rest, found := nextString(batch, orderIDKey)
		if !found {
			break
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":"`...)
		dst = append(dst, id...)
		dst = append(dst, `"}`...)
		n++
		batch = rest
	}
	return append(dst, "]}"...), n
}

// nextString finds the next member key in b and returns its string value
// (without escapes, as ids have none) and what follows it.
func nextString(b, key []byte) (value, rest []byte, found bool) {
	for {
		i := bytes.Index(b, key)
		if i < 0 {
			return nil, nil, false
		}
		b = skipColon(b[i+len(key):])
		if len(b) == 0 || b[0] != '"' {
			continue
		}
		end := bytes.IndexByte(b[1:], '"')
		if end < 0 {
			return nil, nil, false
		}
		return b[1 : 1+end], b[2+end:], true
	}
}

var completedKey = []byte(`"completed"`)

// completedCount reads the number of {"completed": n}; ok is false when the
// body holds none.
func completedCount(b []byte) (n int64, ok bool) {
	i := bytes.Index(b, completedKey)
	if i < 0 {
		return 0, false
	}
	b = skipColon(b[i+len(completedKey):])
	end := 0
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(string(b[:end]), 10, 64)
	return n, err == nil
}

// skipColon skips the white space and colon between a member key and value.
func skipColon(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r' || b[0] == ':') {
		b = b[1:]
	}
	return b
}
