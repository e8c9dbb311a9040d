package api

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadAll(t *testing.T) {
	for _, c := range []struct {
		body string
		n    int64
	}{{"", -1}, {"abc", -1}, {"abc", 3}, {"abcdef", 3}, {strings.Repeat("x", 5000), 5000}, {strings.Repeat("y", 5000), 1}} {
		got, err := readAll(strings.NewReader(c.body), c.n)
		if err != nil || string(got) != c.body {
			t.Errorf("readAll(%d bytes, %d) = %d bytes, %v; want the body", len(c.body), c.n, len(got), err)
		}
	}
	if _, err := readAll(strings.NewReader("ab"), 3); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a body shorter than declared: %v, want io.ErrUnexpectedEOF", err)
	}
}
