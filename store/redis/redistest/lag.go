package redistest

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// LagLink is a TCP proxy in front of a primary through which its replica
// replicates (and, so that Sentinel sees one address for the primary,
// everyone else may talk to it too). Hold makes the replica fall behind
// while it stays connected: the primary's replication stream to it is
// kept in the proxy, while what the replica sends (its REPLCONF ACKs of
// the offset it last had) still reaches the primary, which so keeps
// counting it as a live replica (min-replicas-to-write does not stop it)
// whose WAITs never complete. Release passes the held stream on; Cut
// throws it away and closes the replica's link, as a primary that dies
// before its last writes left the machine.
//
// (CLIENT PAUSE … WRITE on a replica does not do this on Redis 7.0: the
// replica's link to its primary is exempt from the pause, and WAIT counts
// it at once.)
type LagLink struct {
	relay *relay
	mu    sync.Mutex
	held  bool
	links []*replLink // connections that sent REPLCONF: replicas
}

// replLink is the primary-to-replica half of one replica's connection.
type replLink struct {
	c   net.Conn // to the replica
	buf []byte   // held bytes of the replication stream
}

// NewLagLink listens on a free loopback port and forwards to target until
// t ends.
func NewLagLink(t testing.TB, target string) *LagLink {
	t.Helper()
	l := &LagLink{relay: listen(t, "lag link", target)}
	go l.relay.serve(l.pipe)
	t.Cleanup(l.relay.close)
	return l
}

// Addr returns where clients connect.
func (l *LagLink) Addr() string { return l.relay.addr() }

// Port returns the port of Addr.
func (l *LagLink) Port() int { return l.relay.ln.Addr().(*net.TCPAddr).Port }

// Hold keeps from now on the replication stream from the replicas.
func (l *LagLink) Hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = true
}

// Release passes on what Hold kept, and the stream from now on.
func (l *LagLink) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = false
	for _, r := range l.links {
		_, _ = r.c.Write(r.buf)
		r.buf = nil
	}
}

// Cut throws away what Hold kept and closes every connection: the
// replicas never receive it.
func (l *LagLink) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.links {
		r.buf = nil
	}
	l.links = nil
	// Under l.mu, so that no chunk of the stream slips through to a
	// replica between the two.
	l.relay.closeConns()
}

// pipe forwards one connection. A connection whose client sent REPLCONF
// is a replica's: what the primary sends on it may be held.
func (l *LagLink) pipe(c, s net.Conn) {
	kill := func() { _ = c.Close(); _ = s.Close() }
	link := &replLink{c: c}
	repl := false
	go copyChunks(c, kill, func(cmd []byte) bool {
		if !repl && bytes.Contains(bytes.ToLower(cmd), []byte("replconf")) {
			repl = true
			l.mu.Lock()
			l.links = append(l.links, link)
			l.mu.Unlock()
		}
		_, err := s.Write(cmd)
		return err == nil
	})
	copyChunks(s, kill, func(stream []byte) bool {
		l.mu.Lock()
		if l.held && l.isLink(link) {
			link.buf = append(link.buf, stream...)
			l.mu.Unlock()
			return true
		}
		l.mu.Unlock()
		_, err := c.Write(stream)
		return err == nil
	})
}

// isLink reports whether r is a replica's link; l.mu is held.
func (l *LagLink) isLink(r *replLink) bool {
	for _, x := range l.links {
		if x == r {
			return true
		}
	}
	return false
}
