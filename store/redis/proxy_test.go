package redis_test

import (
	"bytes"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a TCP proxy between go-redis and redis-server that can lose the
// reply to a command after Redis has executed it: the reply arrives, and
// the proxy either closes both connections instead of passing it on
// (go-redis sees a dropped connection, as after a network cut, and
// retries) or holds it forever (go-redis waits for its deadline).
type proxy struct {
	ln      net.Listener
	target  string
	trigger []byte // a command whose bytes contain trigger may lose its reply
	drops   atomic.Int64
	holds   atomic.Int64
	mu      sync.Mutex
	conns   []net.Conn
	dropped atomic.Int64
}

// newProxy listens on a free port and forwards to target until t ends.
func newProxy(t testing.TB, target string, trigger string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{ln: ln, target: target, trigger: bytes.ToLower([]byte(trigger))}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Addr is where clients connect.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

// DropNext makes the next n triggering commands lose their replies.
func (p *proxy) DropNext(n int) { p.drops.Add(int64(n)) }

// HoldNext makes the next n triggering commands never get their replies.
func (p *proxy) HoldNext(n int) { p.holds.Add(int64(n)) }

// Dropped returns how many replies were lost or held so far.
func (p *proxy) Dropped() int64 { return p.dropped.Load() }

func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(c, s)
	}
}

// pipe forwards one client connection. A triggering command that finds a
// drop armed marks the connection; the reply that follows is lost.
func (p *proxy) pipe(c, s net.Conn) {
	var doomed, held atomic.Bool
	kill := func() { _ = c.Close(); _ = s.Close() }
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if bytes.Contains(bytes.ToLower(buf[:n]), p.trigger) {
					if takeOne(&p.drops) {
						doomed.Store(true)
					} else if takeOne(&p.holds) {
						held.Store(true)
					}
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					kill()
					return
				}
			}
			if err != nil {
				kill()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && doomed.Load() {
			// Redis has executed the command: lose its reply.
			p.dropped.Add(1)
			kill()
			return
		}
		if n > 0 && held.Load() {
			p.dropped.Add(1)
			held.Store(false)
			holdUntilClosed(s)
			kill()
			return
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				kill()
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				kill()
			}
			_ = c.Close()
			return
		}
	}
}

// holdUntilClosed swallows everything s sends until it closes.
func holdUntilClosed(s net.Conn) { _, _ = io.Copy(io.Discard, s) }

// takeOne decrements n if it is positive and reports whether it did.
func takeOne(n *atomic.Int64) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}
