package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
	"github.com/dispatcher/dispatcher/dispatch"
)

var (
	ctlOnce sync.Once
	ctlBin  string
	ctlErr  error
	ctlDir  string
)

// TestMain removes the dispatchctl binary that the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if ctlDir != "" {
		_ = os.RemoveAll(ctlDir)
	}
	os.Exit(code)
}

// dispatchctl builds the command once per test binary and returns its
// path.
func dispatchctl(t testing.TB) string {
	t.Helper()
	ctlOnce.Do(func() {
		if ctlDir, ctlErr = os.MkdirTemp("", "dispatchctl-"); ctlErr != nil {
			return
		}
		ctlBin = filepath.Join(ctlDir, "dispatchctl")
		out, err := exec.Command("go", "build", "-o", ctlBin, "github.com/dispatcher/dispatcher/client/cmd/dispatchctl").CombinedOutput()
		if err != nil {
			ctlErr = &buildError{err, out}
		}
	})
	if ctlErr != nil {
		t.Fatalf("building dispatchctl: %v", ctlErr)
	}
	return ctlBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

// ctlRun is one run of dispatchctl.
type ctlRun struct {
	stdout, stderr string
	code           int
}

// ctl runs dispatchctl with args against url, with env beyond a clean
// environment and stdin as its standard input.
func ctl(t testing.TB, url string, env []string, stdin string, args ...string) ctlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, dispatchctl(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DISPATCHER_URL=" + url}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := ctlRun{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("dispatchctl %v: %v", args, err)
	}
	return r
}

// ok runs dispatchctl and fails the test unless it exits 0.
func ok(t testing.TB, url string, env []string, stdin string, args ...string) string {
	t.Helper()
	r := ctl(t, url, env, stdin, args...)
	if r.code != 0 {
		t.Fatalf("dispatchctl %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// TestDispatchctl runs the commands of DESIGN §10 against the real
// service on both stores, with tokens, and checks their output, -o json
// and the exit codes.
func TestDispatchctl(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(testing.TB) dispatch.Store) {
		srv := newServer(t, open(t), serverOptions{tokens: true, maxBatch: 100})
		admin := []string{"DISPATCHER_TOKEN=" + adminToken}
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(clientToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		u := srv.url

		if out := ok(t, u, admin, "", "pools", "put", "eu", "-strategy", "waterfill"); !strings.Contains(out, "pool eu: strategy waterfill") {
			t.Fatalf("pools put: %q", out)
		}
		for id, n := range map[string]string{"S1": "1", "S2": "5", "S3": "12"} {
			ok(t, u, admin, "", "scales", "put", "eu", id, "-order-count", n)
		}
		table := ok(t, u, admin, "", "table", "eu")
		if !strings.Contains(table, "S1      4") || !strings.Contains(table, "S3      2147483647") {
			t.Fatalf("table:\n%s", table)
		}
		var ids []string
		for i := 1; i <= 22; i++ {
			ids = append(ids, "o-"+strconv.Itoa(i))
		}
		// A client token from a file, after the command, as -o json.
		out := ok(t, u, nil, "", append([]string{"dispatch", "eu", "-token-file", tokenFile, "-o", "json", "-key", "b1"}, ids...)...)
		var b client.Batch
		if err := json.Unmarshal([]byte(out), &b); err != nil || compIDs(b.Assignments) != "S1 S1 S1 S1 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S1 S2 S2 S1 S3 S2" {
			t.Fatalf("dispatch -o json: %v\n%s", err, out)
		}
		// The same key again replays the batch.
		if out := ok(t, u, admin, "", append([]string{"-o", "json", "dispatch", "eu", "-key", "b1"}, ids...)...); !strings.Contains(out, b.BatchID) {
			t.Fatalf("dispatch replay: %s", out)
		}
		// JSON lines on stdin; an order without an id gets one.
		out = ok(t, u, admin, "{\"id\":\"j-1\",\"key\":\"c-9\"}\n\n{}\n", "dispatch", "eu")
		if !strings.Contains(out, "batch ") || !strings.Contains(out, "j-1") || strings.Count(out, "\n") != 4 {
			t.Fatalf("dispatch from stdin:\n%s", out)
		}
		if out := ok(t, u, admin, "", "orders", "get", "eu", "o-21"); !strings.Contains(out, "o-21   S3     assigned") {
			t.Fatalf("orders get:\n%s", out)
		}
		if out := ok(t, u, admin, "", "orders", "complete", "eu", "o-21", "-duration-ms", "120"); !strings.Contains(out, "completed") {
			t.Fatalf("orders complete:\n%s", out)
		}
		if out := ok(t, u, admin, "", "orders", "cancel", "eu", "o-22"); !strings.Contains(out, "cancelled") {
			t.Fatalf("orders cancel:\n%s", out)
		}
		r := ctl(t, u, admin, "", "orders", "cancel", "eu", "o-21")
		if r.code != 1 || !strings.Contains(r.stderr, "Order state does not allow this (409 order-state)") || !strings.Contains(r.stderr, `order "o-21" is completed`) {
			t.Fatalf("cancel of a completed order: %+v; want exit 1 with the problem's title and detail", r)
		}
		var scales []client.Scale
		if err := json.Unmarshal([]byte(ok(t, u, admin, "", "-o", "json", "scales", "eu")), &scales); err != nil || len(scales) != 3 {
			t.Fatalf("scales -o json: %v %+v", err, scales)
		}
		ok(t, u, admin, "", "scales", "drain", "eu", "S3")
		ok(t, u, admin, "", "scales", "up", "eu", "S3")
		if out := ok(t, u, admin, "", "scales", "down", "eu", "S1"); !strings.Contains(out, "S1      down") {
			t.Fatalf("scales down:\n%s", out)
		}
		var s1 client.Scale
		if err := json.Unmarshal([]byte(ok(t, u, admin, "", "scales", "get", "eu", "S1", "-o", "json")), &s1); err != nil || s1.Outstanding < 12 {
			t.Fatalf("scales get -o json: %v %+v; want S1 with its 12 orders of the batch at least", err, s1)
		}
		held := ok(t, u, admin, "", "scales", "orders", "eu", "S1")
		if n := strings.Count(held, "\n") - 1; int64(n) != s1.Outstanding {
			t.Fatalf("scales orders S1: %d orders, want %d:\n%s", n, s1.Outstanding, held)
		}
		if out := ok(t, u, admin, "", "scales", "reassign", "eu", "S1"); !strings.Contains(out, strconv.FormatInt(s1.Outstanding, 10)+" orders moved from S1") {
			t.Fatalf("scales reassign:\n%s", out)
		}
		if r := ctl(t, u, admin, "", "scales", "rm", "eu", "S2"); r.code != 1 || !strings.Contains(r.stderr, "scale-busy") {
			t.Fatalf("scales rm of a busy Scale: %+v", r)
		}
		ok(t, u, admin, "", "scales", "rm", "eu", "S2", "-force")
		ok(t, u, admin, "", "scales", "rm", "eu", "S1")
		if out := ok(t, u, admin, "", "batches", "get", "eu", b.BatchID); !strings.Contains(out, "22 orders") {
			t.Fatalf("batches get:\n%s", out)
		}
		if out := ok(t, u, admin, "", "pools"); !strings.Contains(out, "eu    waterfill  1") {
			t.Fatalf("pools:\n%s", out)
		}
		if out := ok(t, u, nil, "", "health"); out != "healthz: ok\nreadyz: ok\n" {
			t.Fatalf("health: %q", out)
		}

		// Errors: no token, a client token on an admin command, no server.
		if r := ctl(t, u, nil, "", "pools"); r.code != 1 || !strings.Contains(r.stderr, "Unauthorized (401 unauthorized)") {
			t.Fatalf("pools without a token: %+v", r)
		}
		if r := ctl(t, u, nil, "", "pools", "rm", "eu", "-token-file", tokenFile); r.code != 1 || !strings.Contains(r.stderr, "403 forbidden") {
			t.Fatalf("pools rm with a client token: %+v", r)
		}
		ok(t, u, admin, "", "pools", "rm", "eu")
		if r := ctl(t, u, admin, "", "pools", "get", "eu"); r.code != 1 || !strings.Contains(r.stderr, "Pool not found (404 pool-not-found)") {
			t.Fatalf("pools get of a deleted pool: %+v", r)
		}
	})
}

// TestDispatchctlUsage checks that command lines that do not parse exit 2
// with a message, without calling the service.
func TestDispatchctlUsage(t *testing.T) {
	const nowhere = "http://127.0.0.1:1" // nothing listens: a call would fail with exit 1
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{nil, "", "Usage: dispatchctl"},
		{[]string{"frobnicate"}, "", `unknown command "frobnicate"`},
		{[]string{"scales", "get", "eu"}, "", "scales get takes POOL COMPID"},
		{[]string{"pools", "put", "eu", "-weight", "3"}, "", "flag provided but not defined: -weight"},
		{[]string{"-o", "yaml", "pools"}, "", `-o "yaml": want text or json`},
		{[]string{"dispatch", "eu"}, "", "no orders"},
		{[]string{"dispatch", "eu"}, "{\"id\":\"o-1\",\"colour\":1}\n", "stdin line 1"},
		{[]string{"dispatch", "eu", "-dry-run", "-key", "k", "o-1"}, "", "takes no -key"},
		{[]string{"-url", "localhost:8080", "pools"}, "", "base URL"},
	} {
		r := ctl(t, nowhere, nil, c.stdin, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("dispatchctl %v: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if r := ctl(t, nowhere, nil, "", "help"); r.code != 0 || !strings.Contains(r.stdout, "scales reassign POOL COMPID") {
		t.Errorf("dispatchctl help: exit %d, stdout %q", r.code, r.stdout)
	}
}
