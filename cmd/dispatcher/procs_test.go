package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// built is the dispatcher binary, built once for all the tests that run
// it as a process, and removed by TestMain.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// buildDispatcher builds this command (once per test binary) and returns
// the binary's path, so that tests can run, signal and SIGKILL the service
// as a real process.
func buildDispatcher(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "dispatcher-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "dispatcher")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// proc is a dispatcher process owned by one test.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	addr string // host:port it listens on
	URL  string // http://addr
	log  *logSink
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, once done is closed
}

// startProc runs the dispatcher binary on a free loopback port with env as
// its whole environment, and returns once it listens. The process is
// SIGKILLed, if still running, when t ends.
func startProc(t *testing.T, bin, name string, env map[string]string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, log: &logSink{addr: make(chan string, 1)}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "-addr", "127.0.0.1:0")
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = procAttr()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: start: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.log)
		}
	})
	select {
	case p.addr = <-p.log.addr:
	case <-p.done:
		t.Fatalf("%s exited before listening: %v\n%s", name, p.err, p.log)
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no listening line in 15s; log:\n%s", name, p.log)
	}
	p.URL = "http://" + p.addr
	return p
}

// kill stops the process at once with SIGKILL, as a crash or the OOM
// killer would, and waits for it to exit.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// signal sends sig to the process.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v: %v", p.name, sig, err)
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to exit and returns its exit error
// (nil for status 0).
func (p *proc) wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		return fmt.Errorf("%s still running after %s", p.name, d)
	}
}

// logged waits up to d for a log line whose msg is msg.
func (p *proc) logged(msg string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if strings.Contains(p.log.String(), `"msg":"`+msg+`"`) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// isRefused reports whether err is a refused connection: nothing listens.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
