package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatusWriter: front notes the first final status written, an
// implicit 200 included, and passes 1xx on without noting it.
func TestStatusWriter(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(w *statusWriter)
		want int
	}{
		{"nothing", func(*statusWriter) {}, 0},
		{"write", func(w *statusWriter) { _, _ = w.Write([]byte("x")) }, 200},
		{"flush", func(w *statusWriter) { w.Flush() }, 200},
		{"copy", func(w *statusWriter) { _, _ = w.ReadFrom(strings.NewReader("x")) }, 200},
		{"201 then 500", func(w *statusWriter) { w.WriteHeader(201); w.WriteHeader(500) }, 201},
		{"103 then 404", func(w *statusWriter) { w.WriteHeader(103); w.WriteHeader(404) }, 404},
	} {
		rec := httptest.NewRecorder()
		w := &statusWriter{ResponseWriter: rec}
		c.do(w)
		if w.code != c.want {
			t.Errorf("%s: noted %d, want %d", c.name, w.code, c.want)
		}
		// (the recorder keeps a 1xx as its Code)
		if c.want != 0 && !strings.HasPrefix(c.name, "103") && rec.Code != c.want {
			t.Errorf("%s: answered %d, want %d", c.name, rec.Code, c.want)
		}
		if w.Unwrap() != http.ResponseWriter(rec) {
			t.Errorf("%s: Unwrap is not the server's writer", c.name)
		}
	}
}
