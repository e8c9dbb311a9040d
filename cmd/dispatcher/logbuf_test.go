package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a logBuffer's timer and the test.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) get() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.writes
}

func TestLogBufferGathersLines(t *testing.T) {
	out := &lockedBuffer{}
	b := newLogBuffer(out, 50*time.Millisecond)
	for i := range 100 {
		_, _ = b.Write([]byte(strings.Repeat("x", i%7) + "\n"))
	}
	if got, _ := out.get(); got != "" {
		t.Fatalf("lines written before the flush: %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, writes := out.get()
		if strings.Count(got, "\n") == 100 {
			if writes != 1 {
				t.Errorf("100 lines in %d writes, want 1", writes)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lines not written 10 s after: %d of 100", strings.Count(got, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A full buffer is written at once; Flush writes the rest.
	line := []byte(strings.Repeat("y", 1000) + "\n")
	for range logBufferSize/len(line) + 1 {
		_, _ = b.Write(line)
	}
	if got, writes := out.get(); writes != 2 || len(got) < 100+logBufferSize {
		t.Errorf("after %d bytes: %d bytes in %d writes, want one more write of them", logBufferSize, len(got), writes)
	}
	_, _ = b.Write([]byte("last\n"))
	b.Flush()
	if got, _ := out.get(); !strings.HasSuffix(got, "y\nlast\n") {
		t.Errorf("Flush left lines unwritten: ...%q", got[len(got)-20:])
	}
}
