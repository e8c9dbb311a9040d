package redistest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy between a Redis client and a redis-server that can
// lose the reply to a command after Redis has executed it, or slow every
// reply down. A lost reply either closes both connections instead of being
// passed on (the client sees a dropped connection, as after a network cut,
// and go-redis retries) or is held forever (the client waits for its
// deadline).
type Proxy struct {
	relay   *relay
	trigger [][]byte // a command with one of these as an argument may lose its reply
	drops   atomic.Int64
	holds   atomic.Int64
	delay   atomic.Int64 // nanoseconds added before each reply
	dropped atomic.Int64
}

// NewProxy listens on a free loopback port and forwards to target until t
// ends. trigger names the commands whose replies DropNext and HoldNext may
// lose, such as "fcall" or "fcall|fcall_ro" (case-insensitive); "" names
// every command.
func NewProxy(t testing.TB, target, trigger string) *Proxy {
	t.Helper()
	p := &Proxy{relay: listen(t, "proxy", target), trigger: bytes.Split(bytes.ToLower([]byte(trigger)), []byte("|"))}
	go p.relay.serve(p.pipe)
	t.Cleanup(p.relay.close)
	return p
}

// Addr returns where clients connect.
func (p *Proxy) Addr() string { return p.relay.addr() }

// URL returns a redis:// URL of the proxy for goredis.ParseURL.
func (p *Proxy) URL() string { return "redis://" + p.Addr() + "/0" }

// DropNext makes the next n triggering commands lose their replies, with
// their connections.
func (p *Proxy) DropNext(n int) { p.drops.Add(int64(n)) }

// HoldNext makes the next n triggering commands never get their replies.
func (p *Proxy) HoldNext(n int) { p.holds.Add(int64(n)) }

// SetDelay makes every reply from now on reach the client d late (0: at
// once), as a slow network or a loaded server would.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Heal disarms the drops and holds not yet used and removes the delay.
func (p *Proxy) Heal() {
	p.drops.Store(0)
	p.holds.Store(0)
	p.delay.Store(0)
}

// Dropped returns how many replies were lost or held so far.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// triggers reports whether the bytes of a command hold a trigger as a
// whole argument (the RESP bulk string "$len\r\nname\r\n"), so that a
// longer argument that mentions it, such as a script's source, does not.
func (p *Proxy) triggers(cmd []byte) bool {
	cmd = bytes.ToLower(cmd)
	return slices.ContainsFunc(p.trigger, func(t []byte) bool {
		return len(t) == 0 || bytes.Contains(cmd, fmt.Appendf(nil, "$%d\r\n%s\r\n", len(t), t))
	})
}

// pipe forwards one client connection. A triggering command that finds a
// drop or a hold armed marks the connection; the reply that follows is lost.
func (p *Proxy) pipe(c, s net.Conn) {
	var doomed, held atomic.Bool
	kill := func() { _ = c.Close(); _ = s.Close() }
	go copyChunks(c, kill, func(cmd []byte) bool {
		if p.triggers(cmd) {
			if takeArmed(&p.drops) {
				doomed.Store(true)
			} else if takeArmed(&p.holds) {
				held.Store(true)
			}
		}
		_, err := s.Write(cmd)
		return err == nil
	})
	copyChunks(s, kill, func(reply []byte) bool {
		switch {
		case doomed.Load():
			// Redis has executed the command: lose its reply.
			p.dropped.Add(1)
			return false
		case held.Load():
			p.dropped.Add(1)
			_, _ = io.Copy(io.Discard, s) // until the connection closes
			return false
		}
		if d := time.Duration(p.delay.Load()); d > 0 {
			time.Sleep(d)
		}
		_, err := c.Write(reply)
		return err == nil
	})
}

// takeArmed decrements n if it is positive and reports whether it did.
func takeArmed(n *atomic.Int64) bool {
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
