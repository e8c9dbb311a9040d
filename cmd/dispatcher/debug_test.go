package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// debugAddrOf returns the address of the "debug listening" log line, or "".
func debugAddrOf(log string) string {
	rec, _ := logRecord(log, "debug listening")
	addr, _ := rec["debugAddr"].(string)
	return addr
}

func TestRunDebugListener(t *testing.T) {
	addr, sink := startRun(t, []string{"-debug-addr", "127.0.0.1:0"}, nil)
	dbg := debugAddrOf(sink.String())
	if dbg == "" {
		t.Fatalf("no debug listening line; log:\n%s", sink)
	}
	if dbg == addr {
		t.Fatalf("debug listener on the API address %s", addr)
	}
	status, body := get(t, "http://"+dbg+"/debug/pprof/", "")
	if status != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("debug /debug/pprof/: got %d %.200q, want 200 and the profile index", status, body)
	}
	status, _ = get(t, "http://"+dbg+"/debug/pprof/heap?debug=1", "")
	if status != http.StatusOK {
		t.Errorf("debug /debug/pprof/heap: got %d, want 200", status)
	}
	// The API port serves no profiles.
	if status, _ := get(t, "http://"+addr+"/debug/pprof/", ""); status == http.StatusOK {
		t.Errorf("API /debug/pprof/: got 200, want the profiles only on the debug listener")
	}
}

func TestRunDebugListenerFromEnv(t *testing.T) {
	_, sink := startRun(t, nil, map[string]string{"DISPATCHER_DEBUG_ADDR": "127.0.0.1:0"})
	dbg := debugAddrOf(sink.String())
	if dbg == "" {
		t.Fatalf("no debug listening line; log:\n%s", sink)
	}
	if status, _ := get(t, "http://"+dbg+"/debug/pprof/", ""); status != http.StatusOK {
		t.Errorf("debug /debug/pprof/: got %d, want 200", status)
	}
}

func TestRunNoDebugListenerByDefault(t *testing.T) {
	// Reserve a port, free it, and check that nothing listens there after
	// the service started without -debug-addr; the log names no debug
	// listener either.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().String()
	ln.Close()
	addr, sink := startRun(t, nil, nil)
	if dbg := debugAddrOf(sink.String()); dbg != "" {
		t.Errorf("debug listener on %s without -debug-addr", dbg)
	}
	if c, err := net.DialTimeout("tcp", free, time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on %s", free)
	}
	if status, _ := get(t, "http://"+addr+"/debug/pprof/", ""); status == http.StatusOK {
		t.Errorf("API /debug/pprof/: got 200, want no profiles")
	}
}

func TestRunDebugListenerBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(t.Context(), []string{"-addr", "127.0.0.1:0", "-debug-addr", ln.Addr().String()}, envOf(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "debug listen") {
		t.Errorf("got %v, want a debug listen error", err)
	}
}

func TestParseConfigDebugAddr(t *testing.T) {
	c, err := parseConfig(nil, envOf(map[string]string{"DISPATCHER_DEBUG_ADDR": "127.0.0.1:6060"}), io.Discard)
	if err != nil || c.DebugAddr != "127.0.0.1:6060" {
		t.Errorf("env: got %q, %v", c.DebugAddr, err)
	}
	c, err = parseConfig([]string{"-debug-addr", "127.0.0.1:6061"}, envOf(map[string]string{"DISPATCHER_DEBUG_ADDR": "127.0.0.1:6060"}), io.Discard)
	if err != nil || c.DebugAddr != "127.0.0.1:6061" {
		t.Errorf("flag over env: got %q, %v", c.DebugAddr, err)
	}
}
