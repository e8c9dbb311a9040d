package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// scalesReport is the result of the scales mode.
type scalesReport struct {
	Targets      []string         `json:"targets"`
	Pool         string           `json:"pool"`
	Concurrency  int              `json:"concurrency"`
	N            int              `json:"n"`
	Seconds      float64          `json:"seconds"`
	ScalesPerSec float64          `json:"scalesPerSec"`
	Created      int64            `json:"created"`
	Updated      int64            `json:"updated"`
	Errors       map[string]int64 `json:"errors"`
}

// registrar is one worker of the scales mode.
type registrar struct {
	created, updated, failed atomic.Int64
	errs                     map[string]int64
	resp                     bytes.Buffer
	body                     []byte
	conns                    *conns
}

// runScales creates (or updates) the pool at the first target, then
// registers the N Scales with concurrent PUTs, round-robin over the
// targets. It fails when the pool or any Scale failed.
func runScales(ctx context.Context, cfg scalesConfig, stdout, stderr io.Writer) error {
	rq := newRequester(cfg.clientConfig)
	if err := putPool(ctx, rq.conns(), cfg); err != nil {
		return err
	}

	start := time.Now()
	var next atomic.Int64
	regs := make([]*registrar, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range regs {
		r := &registrar{errs: map[string]int64{}, conns: rq.conns()}
		regs[i] = r
		wg.Go(func() {
			defer r.conns.close()
			for target := i; ctx.Err() == nil; target++ {
				n := int(next.Add(1))
				if n > cfg.N {
					return
				}
				r.register(ctx, cfg, cfg.Targets[target%len(cfg.Targets)], n)
			}
		})
	}
	prog := startProgress(stderr, cfg.Progress, start, func() progressSample {
		var done, failed int64
		for _, r := range regs {
			done += r.created.Load() + r.updated.Load()
			failed += r.failed.Load()
		}
		return progressSample{phase: "scales", totals: []namedTotal{{"scales", done}}, errors: failed}
	})
	wg.Wait()
	prog.stop()

	rep := scalesReport{
		Targets: cfg.Targets, Pool: cfg.Pool, Concurrency: cfg.Concurrency, N: cfg.N,
		Seconds: time.Since(start).Seconds(), Errors: map[string]int64{},
	}
	for _, r := range regs {
		rep.Created += r.created.Load()
		rep.Updated += r.updated.Load()
		for k, v := range r.errs {
			rep.Errors[k] += v
		}
	}
	if rep.Seconds > 0 {
		rep.ScalesPerSec = float64(rep.Created+rep.Updated) / rep.Seconds
	}
	if err := writeScalesReport(stdout, rep, cfg.JSON); err != nil {
		return err
	}
	if missing := int64(cfg.N) - rep.Created - rep.Updated; missing > 0 {
		return fmt.Errorf("%d of %d Scales not registered", missing, cfg.N)
	}
	return ctx.Err()
}

// putPool creates or updates the pool with the configured strategy.
func putPool(ctx context.Context, c *conns, cfg scalesConfig) error {
	defer c.close()
	body, err := json.Marshal(map[string]string{"strategy": cfg.Strategy})
	if err != nil {
		return err
	}
	var resp bytes.Buffer
	status, err := c.do(ctx, "PUT", cfg.Targets[0]+"/v1/pools/"+cfg.Pool, body, "", &resp)
	if !ok(status, err) {
		if err != nil {
			return fmt.Errorf("creating pool %s: %w", cfg.Pool, err)
		}
		return fmt.Errorf("creating pool %s: status %d: %s", cfg.Pool, status, strings.TrimSpace(resp.String()))
	}
	return nil
}

// register PUTs Scale number n.
func (r *registrar) register(ctx context.Context, cfg scalesConfig, target string, n int) {
	r.body = append(r.body[:0], '{')
	if cfg.MaxCount > 0 {
		r.body = append(r.body, `"orderCount":`...)
		r.body = strconv.AppendUint(r.body, splitmix64(cfg.Seed+uint64(n))%uint64(cfg.MaxCount+1), 10)
	}
	r.body = append(r.body, '}')
	url := target + "/v1/pools/" + cfg.Pool + "/scales/" + compID(cfg.Prefix, n, cfg.N)
	status, err := r.conns.do(ctx, "PUT", url, r.body, "", &r.resp)
	switch {
	case ok(status, err) && status == 201:
		r.created.Add(1)
	case ok(status, err):
		r.updated.Add(1)
	default:
		r.failed.Add(1)
		r.errs[outcome(status, err)]++
		if err != nil {
			pause(ctx, failurePause)
		}
	}
}

// compID names Scale n of total: the prefix and n zero-padded to at least
// six digits, or as many as total has, so that the names sort by number.
func compID(prefix string, n, total int) string {
	width := max(6, len(strconv.Itoa(total)))
	return fmt.Sprintf("%s%0*d", prefix, width, n)
}

// splitmix64 scrambles x, so that the initial orderCount of a Scale depends
// only on the seed and its number, not on which worker registers it.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// writeScalesReport prints r as text, or as indented JSON.
func writeScalesReport(w io.Writer, r scalesReport, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	_, err := fmt.Fprintf(w, "dispatch-bench scales: %s, pool %s, concurrency %d\n"+
		"registered    %d of %d Scales (%d created, %d updated) in %.2f s\n"+
		"scales/s      %.1f\n"+
		"errors        %s\n",
		plural(len(r.Targets), "target"), r.Pool, r.Concurrency,
		r.Created+r.Updated, r.N, r.Created, r.Updated, r.Seconds, r.ScalesPerSec, errorList(r.Errors))
	return err
}
