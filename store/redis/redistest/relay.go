package redistest

import (
	"net"
	"sync"
	"testing"
)

// relay is what Proxy and LagLink share: a listener on a free loopback
// port that pairs each connection it accepts with a new one to target and
// hands the pair to a pipe, keeping both ends so that they can be closed
// together.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

// listen opens the relay's listener, or fails t naming what it is for.
func listen(t testing.TB, what, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %s: %v", what, err)
	}
	return &relay{ln: ln, target: target}
}

// addr returns where clients connect.
func (r *relay) addr() string { return r.ln.Addr().String() }

// serve accepts connections until the listener closes, and runs pipe on
// each with its new connection to target; a client whose target cannot be
// reached is dropped.
func (r *relay) serve(pipe func(c, s net.Conn)) {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, s)
		r.mu.Unlock()
		go pipe(c, s)
	}
}

// closeConns closes every connection relayed so far.
func (r *relay) closeConns() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.conns = nil
}

// close stops accepting and closes every connection.
func (r *relay) close() {
	_ = r.ln.Close()
	r.closeConns()
}

// copyChunks reads src until it fails, handing each chunk read to send,
// and then runs closePair; send returns false to stop before that. The
// chunk is only valid during the call.
func copyChunks(src net.Conn, closePair func(), send func(chunk []byte) bool) {
	defer closePair()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !send(buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}
