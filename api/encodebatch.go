package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// A batch is the answer of every dispatch, so it is encoded by hand rather
// than through toBatch and encoding/json's reflection: appendBatch writes
// the bytes json.Marshal(toBatch(b)) would (TestAppendBatchMatchesMarshal
// and FuzzAppendBatch hold it to that).

// appendBatch appends b as batchJSON encodes it.
func appendBatch(dst []byte, b dispatch.Batch) []byte {
	dst = append(dst, '{')
	if b.ID != "" {
		dst = append(dst, `"batchId":`...)
		dst = appendJSONString(dst, b.ID)
		dst = append(dst, ',')
	}
	dst = append(dst, `"pool":`...)
	dst = appendJSONString(dst, b.Pool)
	dst = append(dst, `,"strategy":`...)
	dst = appendJSONString(dst, string(b.Strategy))
	dst = append(dst, `,"createdAt":"`...)
	dst = appendTime(dst, b.CreatedAt)
	dst = append(dst, `","assignments":[`...)
	for i, a := range b.Assignments {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"orderId":`...)
		dst = appendJSONString(dst, a.OrderID)
		dst = append(dst, `,"compId":`...)
		dst = appendJSONString(dst, a.CompID)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
// The ids of the API need no escaping (printable ASCII but for the
// characters JSON or HTML escape, jsonPlain); anything else, a byte of
// UTF-8 above ASCII included, takes encoding/json.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			q, _ := json.Marshal(s) // a string always marshals
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// jsonPlain holds the bytes encoding/json writes as they are in a string:
// printable ASCII but '"', '\\' and the HTML characters '<', '>' and '&'.
var jsonPlain = func() (t [256]bool) {
	for c := ' '; c <= '~'; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// jsonType is the Content-Type header of a JSON answer. Header.Add would
// append to a copy (its capacity is its length), never to it.
var jsonType = []string{"application/json"}

// autoLengthBelow is the size of an answer below which writeBatch leaves
// its Content-Length to net/http, which adds it to an answer the handler
// wrote whole without a flush when it is "under a few KB"
// (http.ResponseWriter; net/http buffers 2,048 bytes before it would send
// a body chunked). It writes that header with the Date it adds, without
// the handler's header map: a Content-Length set by the handler is
// parsed back (WriteHeader), copied with the map and written through
// Header.Write's sort and cleaning, about 1,000 instructions of a
// single-order dispatch (issue 21, web25). TestAnswerLength holds the
// header to the body's length on both sides of this size.
const autoLengthBelow = 1 << 10

// batchBufs holds the buffers of writeBatch, so that a batch's answer is
// encoded without allocating one.
var batchBufs = sync.Pool{New: func() any { return new([]byte) }}

// writeBatch answers b as application/json with status, as writeJSON(w,
// status, toBatch(b)) does, with its Content-Length, in one write where it
// can (writeWhole).
func writeBatch(w http.ResponseWriter, r *http.Request, status int, b dispatch.Batch) {
	bp := batchBufs.Get().(*[]byte)
	buf := append(appendBatch((*bp)[:0], b), '\n')
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Date"] = dateHeader(time.Now())
	if len(buf) >= autoLengthBelow {
		h["Content-Length"] = []string{strconv.Itoa(len(buf))}
	}
	w.WriteHeader(status)
	writeWhole(w, r, buf)
	if cap(buf) <= 1<<20 {
		*bp = buf
		batchBufs.Put(bp)
	}
}
