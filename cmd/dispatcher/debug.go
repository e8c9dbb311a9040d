package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugServer serves net/http/pprof on its own listener and mux, never on
// the API's: DISPATCHER_DEBUG_ADDR / -debug-addr, off when empty. The
// profiles expose the process's internals and cost CPU to take, so bind it
// to loopback (or a port no client can reach).
type debugServer struct {
	srv *http.Server
	ln  net.Listener
}

// debugMux is the debug listener's handler: the pprof index, its named
// profiles (heap, goroutine, allocs, block, mutex, threadcreate) and the
// cmdline, profile, symbol and trace endpoints.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startDebug opens addr and serves the pprof mux on it; an empty addr
// starts nothing and returns nil. The listener is opened before returning
// so that a bad or busy address fails start-up.
func startDebug(addr string, log *slog.Logger) (*debugServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug listen: %w", err)
	}
	d := &debugServer{
		ln: ln,
		srv: &http.Server{
			Handler:           debugMux(),
			ReadHeaderTimeout: 5 * time.Second,
			// No WriteTimeout: /debug/pprof/profile and /trace stream for
			// their ?seconds=.
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("the pprof debug listener is not on loopback: anyone who reaches it can read the process's internals", "debugAddr", ln.Addr().String())
	}
	log.Info("debug listening", "debugAddr", ln.Addr().String())
	go func() {
		if err := d.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug listener stopped", "err", err.Error())
		}
	}()
	return d, nil
}

// Close stops the debug listener; a nil server is a no-op. Profiles in
// progress are cut off: the debug listener does not drain.
func (d *debugServer) Close() {
	if d == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := d.srv.Shutdown(ctx); err != nil {
		_ = d.srv.Close()
	}
}
