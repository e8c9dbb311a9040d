package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/store/memory"
)

// tmux runs one tmux command on the test's own server (socket sock).
func tmux(t testing.TB, sock string, args ...string) string {
	t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screenUntil captures the pane until cond holds on its text, and fails
// the test after a minute.
func screenUntil(t testing.TB, sock, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		screen := tmux(t, sock, "capture-pane", "-p", "-t", "w")
		if cond(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed %s; last:\n%s", what, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDispatchctlWatchInTmux runs `dispatchctl watch` in a real terminal
// (tmux, 100×15) and reads the screen: bars for the Scales, then the same
// screen redrawn in place (one header, no scrolling) as orders arrive and
// a Scale goes down, and a clean exit on Ctrl-C. The view reads the watch
// stream (DESIGN §9): its counters line, which polling the Scale list
// cannot show, counts the batch.
func TestDispatchctlWatchInTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux not found (%v): the watch view is tested in a real terminal; install it with `apt-get install tmux` (.ci/run does)", err)
	}
	srv := newServer(t, memory.New(memory.Options{}), serverOptions{})
	c := newClient(t, srv.url)
	ctx := context.Background()
	if _, err := c.PutPool(ctx, "eu", client.PoolInput{}); err != nil {
		t.Fatal(err)
	}
	for id, in := range map[string]client.ScaleInput{
		"S1": {OrderCount: client.Int64(1)},
		"S2": {OrderCount: client.Int64(5), MaxOrders: client.Int64(30)},
		"S3": {OrderCount: client.Int64(12)},
	} {
		if _, err := c.PutScale(ctx, "eu", id, in); err != nil {
			t.Fatal(err)
		}
	}

	sock := filepath.Join(t.TempDir(), "tmux.sock")
	cmd := fmt.Sprintf("env DISPATCHER_URL=%s %s watch eu -interval 100ms; echo exit status $?", srv.url, dispatchctl(t))
	tmux(t, sock, "new-session", "-d", "-s", "w", "-x", "100", "-y", "15", cmd, ";", "set-option", "-t", "w", "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })

	screen := screenUntil(t, sock, "three Scales", func(s string) bool { return strings.Contains(s, "S3") })
	lines := strings.Split(screen, "\n")
	if !strings.Contains(lines[0], "dispatchctl watch eu — waterfill, 3 Scales") || !strings.Contains(lines[0], "streamed every 250ms") {
		t.Fatalf("first line %q: want the pool's header, on the stream (its least interval, 250ms)", lines[0])
	}
	if !strings.HasPrefix(lines[1], "dispatched 0 · completed 0 · cancelled 0 · moved 0 · failed 0") {
		t.Fatalf("second line %q: want the stream's counters", lines[1])
	}
	// Least loaded first; S2's bar marks its maxOrders with |.
	if !strings.HasPrefix(lines[3], "S1 ") || !strings.HasPrefix(lines[4], "S2 ") || !strings.HasPrefix(lines[5], "S3 ") {
		t.Fatalf("rows not S1, S2, S3 by load:\n%s", screen)
	}
	if !strings.Contains(lines[4], "▒") || !strings.Contains(lines[4], "|") || !strings.HasSuffix(strings.TrimRight(lines[4], " "), "30") {
		t.Fatalf("S2's row %q: want its baseLoad ▒ and maxOrders | 30", lines[4])
	}

	in := client.BatchInput{}
	for i := range 22 {
		in.Orders = append(in.Orders, client.OrderInput{ID: fmt.Sprintf("o-%d", i)})
	}
	if _, err := c.Dispatch(ctx, "eu", in, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutScale(ctx, "eu", "S3", client.ScaleInput{State: client.ScaleDown}); err != nil {
		t.Fatal(err)
	}
	screen = screenUntil(t, sock, "the batch and S3 down", func(s string) bool {
		return strings.Contains(s, "down") && strings.Contains(s, "█") && strings.Contains(s, "dispatched 22 ")
	})
	if n := strings.Count(screen, "dispatchctl watch eu"); n != 1 {
		t.Fatalf("the header shows %d times: want the screen redrawn in place, not scrolled:\n%s", n, screen)
	}
	lines = strings.Split(screen, "\n")
	// 22 orders on 1, 5, 12 leave 13, 14, 13 (DESIGN §2): S1 13, S3 13, S2 14.
	for i, want := range []string{"S1 ", "S3 ", "S2 "} {
		if !strings.HasPrefix(lines[3+i], want) {
			t.Fatalf("row %d %q: want %s (by orderCount, then compId):\n%s", i, lines[3+i], want, screen)
		}
	}
	if f := strings.Fields(lines[3]); f[len(f)-3] != "13" || !strings.Contains(lines[4], "down") {
		t.Fatalf("rows after the batch:\n%s", screen)
	}

	// The shell prints the exit status: tmux may mark the pane dead (its
	// terminal closed) before it has the status.
	tmux(t, sock, "send-keys", "-t", "w", "C-c")
	screen = screenUntil(t, sock, "dispatchctl's exit", func(s string) bool { return strings.Contains(s, "exit status ") })
	if !strings.Contains(screen, "exit status 0") {
		t.Fatalf("dispatchctl watch did not exit 0 on Ctrl-C:\n%s", screen)
	}
}
