package redistest

import (
	"syscall"
	"testing"
)

// StartAOF runs a new redis-server as Start does, but durable: the
// append-only file is on, fsynced before every reply (appendfsync always),
// in the server's own temporary directory. A write Redis has acknowledged
// survives Kill, and Restart (after Stop or Kill) loads it back.
func StartAOF(t testing.TB) *Server {
	t.Helper()
	return start(t, "--appendonly", "yes", "--appendfsync", "always")
}

// Pause stops the server's process with SIGSTOP: its connections stay
// open, but it answers nothing, as a server stalled by a long fork, a swap
// storm or a partition that drops packets. Resume continues it; a paused
// server is resumed before it is stopped when the test ends.
func (s *Server) Pause() {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatalf("redistest: Pause of a stopped server %s", s.Addr())
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("redistest: SIGSTOP %s: %v", s.Addr(), err)
	}
	cmd := s.cmd
	s.t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT) })
}

// Resume continues a paused server.
func (s *Server) Resume() {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatalf("redistest: Resume of a stopped server %s", s.Addr())
	}
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("redistest: SIGCONT %s: %v", s.Addr(), err)
	}
}
