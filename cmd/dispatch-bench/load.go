package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The phases of a run. A request counts in the phase in which its answer
// arrives: the rates and latencies are those of the window; the drain holds
// the requests in flight when the window closed, which finish but start no
// more, so that every order the server recorded is counted.
const (
	phaseWarmup int32 = iota
	phaseWindow
	phaseDrain
	phases
)

// failurePause is how long a worker waits after a request that got no
// answer, before it sends the next.
const failurePause = 10 * time.Millisecond

// counters are a worker's tallies of one phase. They are atomic so that the
// progress line can read them while the worker runs.
type counters struct {
	sentBatches, sentOrders atomic.Int64
	okBatches, okOrders     atomic.Int64
	failed                  atomic.Int64
}

// worker is one sender. Only its own goroutine writes its fields; the
// maps and the histogram are read after it has stopped.
type worker struct {
	count     [phases]counters
	errs      [phases]map[string]int64
	latency   histogram // of the window's successful batches
	completed atomic.Int64
	complErrs map[string]int64
	// firstFail is the first error of a request that got no answer, to
	// say why (connection refused, a reset, TLS) in the report.
	firstFail string
	target    int // the next replica, round-robin
	body      []byte
	compl     []byte
	resp      bytes.Buffer
	conns     *conns
}

// loader drives the run mode.
type loader struct {
	cfg   loadConfig
	rq    *requester
	phase atomic.Int32
	// prefix makes this run's order ids and idempotency keys unique.
	prefix      string
	nextOrder   atomic.Uint64
	nextKey     atomic.Uint64
	batchURLs   []string
	complURLs   []string
	anonymous   []byte // the body of every batch with -ids none
	workers     []*worker
	interrupted bool
}

func newLoader(cfg loadConfig) *loader {
	l := &loader{cfg: cfg, rq: newRequester(cfg.clientConfig), prefix: runPrefix()}
	for _, t := range cfg.Targets {
		base := t + "/v1/pools/" + cfg.Pool
		l.batchURLs = append(l.batchURLs, base+"/batches")
		l.complURLs = append(l.complURLs, base+"/completions")
	}
	if cfg.IDs == "none" {
		l.anonymous = appendAnonymousOrders(nil, cfg.Batch)
	}
	for i := range cfg.Concurrency {
		w := &worker{target: i % len(cfg.Targets), complErrs: map[string]int64{}, conns: l.rq.conns()}
		for p := range w.errs {
			w.errs[p] = map[string]int64{}
		}
		l.workers = append(l.workers, w)
	}
	return l
}

// runPrefix is a random per-run prefix, such as "3f9a0c1e77d2-".
func runPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:]) + "-"
}

// runLoad runs the warmup and the measured window, drains the requests in
// flight, and prints the report. It fails when no batch succeeded.
func runLoad(ctx context.Context, cfg loadConfig, stdout, stderr io.Writer) error {
	l := newLoader(cfg)
	rep := l.run(ctx, stderr)
	if err := writeLoadReport(stdout, rep, cfg.JSON); err != nil {
		return err
	}
	if rep.Total.Batches == 0 {
		return errors.New("no batch succeeded")
	}
	return nil
}

// run sends until the window closes or ctx ends, and returns the report.
func (l *loader) run(ctx context.Context, stderr io.Writer) loadReport {
	start := time.Now()
	if l.cfg.Warmup == 0 {
		l.phase.Store(phaseWindow)
	}
	var wg sync.WaitGroup
	for _, w := range l.workers {
		wg.Go(func() { l.work(ctx, w) })
	}
	prog := startProgress(stderr, l.cfg.Progress, start, l.snapshot)

	windowStart, measuring := start, true
	if l.cfg.Warmup > 0 {
		measuring = sleep(ctx, l.cfg.Warmup)
		windowStart = time.Now()
		if measuring {
			l.phase.Store(phaseWindow)
		}
	}
	if measuring {
		sleep(ctx, l.cfg.Duration)
	}
	windowEnd := time.Now()
	l.phase.Store(phaseDrain)
	l.interrupted = ctx.Err() != nil
	wg.Wait()
	prog.stop()
	return l.report(windowStart.Sub(start), windowEnd.Sub(windowStart))
}

// sleep waits d and reports true, or reports false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// work sends batches until the window closes.
func (l *loader) work(ctx context.Context, w *worker) {
	defer w.conns.close()
	n := l.cfg.Batch
	var key string
	for l.phase.Load() != phaseDrain && ctx.Err() == nil {
		var first uint64
		if l.anonymous != nil {
			w.body = l.anonymous
		} else {
			first = l.nextOrder.Add(uint64(n)) - uint64(n) + 1
			w.body = appendOrders(w.body[:0], l.prefix, first, n)
		}
		if l.cfg.Idempotency {
			key = l.prefix + "k" + strconv.FormatUint(l.nextKey.Add(1), 10)
		}
		target := w.target
		w.target = (w.target + 1) % len(l.batchURLs)

		began := time.Now()
		status, err := w.conns.do(ctx, "POST", l.batchURLs[target], w.body, key, &w.resp)
		took := time.Since(began)

		phase := l.phase.Load()
		c := &w.count[phase]
		c.sentBatches.Add(1)
		c.sentOrders.Add(int64(n))
		if !ok(status, err) {
			c.failed.Add(1)
			w.errs[phase][failureKind(status, err, w.resp.Bytes())]++
			if err != nil {
				if w.firstFail == "" {
					w.firstFail = err.Error()
				}
				pause(ctx, failurePause)
			}
			continue
		}
		c.okBatches.Add(1)
		c.okOrders.Add(int64(n))
		if phase == phaseWindow {
			w.latency.record(took)
		}
		if l.cfg.Complete {
			l.complete(ctx, w, target)
		}
	}
}

// complete completes the batch just dispatched, at the replica that
// dispatched it. With ids of its own the completions body is the batch
// body; else the ids are read from the answer.
func (l *loader) complete(ctx context.Context, w *worker, target int) {
	body := w.body
	if l.anonymous != nil {
		var n int
		w.compl, n = appendCompletions(w.compl[:0], w.resp.Bytes())
		body = w.compl
		if n == 0 {
			w.complErrs["no orderIds in the answer"]++
			return
		}
	}
	status, err := w.conns.do(ctx, "POST", l.complURLs[target], body, "", &w.resp)
	if !ok(status, err) {
		w.complErrs[failureKind(status, err, w.resp.Bytes())]++
		return
	}
	// An answer without the count (not the service's) completed nothing
	// that the tool can tell.
	if done, found := completedCount(w.resp.Bytes()); found {
		w.completed.Add(done)
	} else {
		w.complErrs["answer without a completed count"]++
	}
}

// snapshot sums the counters of every worker and phase, for the progress
// line.
func (l *loader) snapshot() progressSample {
	var orders, batches, errors int64
	for _, w := range l.workers {
		for p := range w.count {
			orders += w.count[p].okOrders.Load()
			batches += w.count[p].okBatches.Load()
			errors += w.count[p].failed.Load()
		}
	}
	return progressSample{
		phase:  [...]string{"warmup", "measure", "drain"}[l.phase.Load()],
		totals: []namedTotal{{"orders", orders}, {"batches", batches}},
		errors: errors,
	}
}
