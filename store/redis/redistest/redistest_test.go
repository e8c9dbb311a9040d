package redistest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// fatal records a Fatalf and stops the helper that called it, as testing's
// own Fatalf stops the test.
type fatal struct {
	testing.TB
	msg string
}

type stopped struct{}

func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(stopped{})
}

// TestMissingBinaryFails: without redis-server in PATH the tests fail, and
// say how to install it; they never skip.
func TestMissingBinaryFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	f := &fatal{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopped); !ok {
					panic(r)
				}
			}
		}()
		redistest.Start(f)
	}()
	if f.msg == "" {
		t.Fatalf("Start without redis-server in PATH did not fail")
	}
	if !strings.Contains(f.msg, "apt-get install redis-server") {
		t.Errorf("failure %q does not say to apt-get install redis-server", f.msg)
	}
}

// TestRestart keeps the port across a restart.
func TestRestart(t *testing.T) {
	s := redistest.Start(t)
	addr := s.Addr()
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("address after restart: got %s, want %s", s.Addr(), addr)
	}
}
