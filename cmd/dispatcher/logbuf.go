package main

import (
	"io"
	"sync"
	"time"
)

// logBuffer gathers the log's lines and writes them to w together: at
// most flushAfter after the first line not yet written, at once when
// logBufferSize bytes wait, and on Close. Under load every request logs a
// line, and a write system call per line costs a replica more CPU than
// making the line (issue 21); gathered, a busy replica writes some ten
// times a second. main gives it os.Stdout; run, and so the tests, take
// any writer.
type logBuffer struct {
	w          io.Writer
	flushAfter time.Duration

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while buf holds lines
	armed bool
}

// logBufferSize is how many bytes of lines make a logBuffer write at once.
const logBufferSize = 32 << 10

// logFlushAfter is how long main's log lines wait at most.
const logFlushAfter = 100 * time.Millisecond

func newLogBuffer(w io.Writer, flushAfter time.Duration) *logBuffer {
	b := &logBuffer{w: w, flushAfter: flushAfter, buf: make([]byte, 0, logBufferSize)}
	b.timer = time.AfterFunc(time.Hour, b.Flush)
	b.timer.Stop()
	return b
}

// Write keeps p, a whole line as slog writes it, for the next flush. It
// never fails: a failure to write to w shows on Flush (and is lost, as a
// line slog fails to write is).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	switch {
	case len(b.buf) >= logBufferSize:
		b.flushLocked()
	case !b.armed:
		b.armed = true
		b.timer.Reset(b.flushAfter)
	}
	return len(p), nil
}

// Flush writes every line kept so far.
func (b *logBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
}

func (b *logBuffer) flushLocked() {
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
	if len(b.buf) > 0 {
		_, _ = b.w.Write(b.buf)
		b.buf = b.buf[:0]
	}
}
