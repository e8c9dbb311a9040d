// Package redistest starts throwaway redis-server processes for tests.
//
// Each Server runs the redis-server binary found in PATH on a free loopback
// port, without persistence (--save ” --appendonly no), in a temporary
// directory, and is stopped by t.Cleanup. A missing binary fails the test
// with instructions, never skips it: CI must not pass by testing nothing.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a redis-server process owned by one test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string // beyond the defaults
	conf string   // a config file, given first (Sentinel needs one)
	cmd  *exec.Cmd
	done chan struct{}
}

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 10 * time.Second

// clusterTimeout bounds how long the nodes of a new cluster may take to
// agree on its slots: gossip, slower than a start, and seen to need more
// than startTimeout on a loaded machine under -race.
const clusterTimeout = 30 * time.Second

// Start runs a new redis-server on a free port and registers its stop with
// t.Cleanup. It fails t if the binary is missing or the server does not
// start.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t)
}

// StartWith runs a new redis-server as Start does, with args beyond the
// defaults (e.g. "--requirepass", "secret").
func StartWith(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, args...)
}

// start runs redis-server with args beyond the defaults.
func start(t testing.TB, args ...string) *Server {
	t.Helper()
	return startConf(t, "", args...)
}

// startConf runs redis-server on config file conf (none if empty) with args
// beyond the defaults.
func startConf(t testing.TB, conf string, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server not found in PATH (%v); the Redis store's tests need it: "+
			"install it with `apt-get install redis-server` (Debian/Ubuntu) or `brew install redis` (macOS)", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), args: args, conf: conf}
	t.Cleanup(s.Stop)
	var last error
	for range 5 { // another process may take the free port before Redis binds it
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("redistest: no free port: %v", err)
		}
		if last = s.launch(); last == nil {
			return s
		}
	}
	t.Fatalf("redistest: redis-server did not start: %v", last)
	return nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL returns a redis:// URL of the server for goredis.ParseURL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Stop stops the server and waits for it to exit; stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart starts the stopped server again on the same port, empty. It fails
// the test if the server does not start.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	deadline := time.Now().Add(startTimeout)
	for {
		// The old socket may linger a moment; retry until the port is free.
		if err = s.launch(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("redistest: restart on port %d: %v", s.port, err)
	}
}

// launch starts redis-server on s.port and waits until it answers PING.
func (s *Server) launch() error {
	logFile := filepath.Join(s.dir, "redis.log")
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", logFile,
		"--daemonize", "no",
		"--protected-mode", "no"),
		s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		if err := ping(ctx, s.Addr()); err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			log, _ := os.ReadFile(logFile)
			return fmt.Errorf("redis-server exited: %s", tail(string(log)))
		case <-ctx.Done():
			s.Stop()
			return errors.New("redis-server did not answer PING in time")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ping sends one inline PING and expects +PONG.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort returns a free loopback port p whose cluster bus port p+10000 is
// free too.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if p+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return p, nil
	}
	return 0, errors.New("no port p with p+10000 free")
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}
