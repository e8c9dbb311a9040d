package api

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// net/http buffers a connection's writes in 4 KiB (its own size; no
// setting), so an answer larger than that less its header, a batch of
// about 85 orders or more, leaves in two write system calls: the buffer,
// full, while the handler writes, and the rest when the request ends. Each
// write on loopback also wakes the client, which reads the answer in two.
// A connection of Listener can hold its writes while a handler writes a
// large answer and send them in one (writeWhole): the bytes and their
// order are the same; only the number of system calls changes.

// Listener returns ln with each connection it accepts able to hold its
// writes while a large answer is written, for a server whose ConnContext
// is ConnContext. A handler served on any other listener writes as
// net/http does.
func Listener(ln net.Listener) net.Listener { return holdListener{ln} }

// ConnContext is the http.Server's ConnContext for a listener of
// Listener: it puts the connection in the context of its requests, where
// the handler finds it.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(*holdConn); ok {
		return context.WithValue(ctx, holdConnKey{}, hc)
	}
	return ctx
}

type holdListener struct{ net.Listener }

func (l holdListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &holdConn{Conn: c}, nil
}

type holdConnKey struct{}

// holdConn is a connection of Listener. held is set and used by the
// goroutine that serves the connection's requests, the only one that
// writes to an HTTP/1 connection, so it needs no lock.
type holdConn struct {
	net.Conn
	// held is not nil while writes are held: they are appended to it.
	held *[]byte
}

// Write appends p to what is held, when writes are held, or writes it.
func (c *holdConn) Write(p []byte) (int, error) {
	if c.held != nil {
		*c.held = append(*c.held, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite closes the writing side of a TCP connection, which net/http
// does before closing one whose request it did not read whole.
func (c *holdConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// heldBufs holds the buffers of the writes held.
var heldBufs = sync.Pool{New: func() any { return new([]byte) }}

// holdFrom is the size of an answer that writeWhole sends in one write: a
// smaller one, with its header, fits net/http's 4 KiB buffer, and leaves in
// one write anyway.
const holdFrom = 3 << 10

// writeWhole writes body, whose header w has set, and sends the answer in
// one write when the request came over a connection of Listener in
// HTTP/1 and the body is holdFrom bytes or more; otherwise as net/http
// does. A failed write closes the connection, as net/http does after one.
func writeWhole(w http.ResponseWriter, r *http.Request, body []byte) {
	// The size first: most answers are small, and finding the connection
	// walks the request's contexts.
	var c *holdConn
	if len(body) >= holdFrom && r.ProtoMajor == 1 {
		c, _ = r.Context().Value(holdConnKey{}).(*holdConn)
	}
	if c == nil || c.held != nil {
		_, _ = w.Write(body)
		return
	}
	bp := heldBufs.Get().(*[]byte)
	*bp = (*bp)[:0]
	c.held = bp
	_, _ = w.Write(body)
	_ = http.NewResponseController(w).Flush()
	c.held = nil
	if _, err := c.Conn.Write(*bp); err != nil {
		_ = c.Conn.Close()
	}
	if cap(*bp) <= 1<<20 {
		heldBufs.Put(bp)
	}
}
