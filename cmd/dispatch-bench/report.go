package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// loadReport is the result of the run mode, printed as text or, with -json,
// as this structure.
type loadReport struct {
	Targets     []string `json:"targets"`
	Pool        string   `json:"pool"`
	Concurrency int      `json:"concurrency"`
	Batch       int      `json:"batch"`
	IDs         string   `json:"ids"`
	// IDPrefix starts every order id of the run (with -ids random), followed
	// by a number from 1; idempotency keys are the prefix, "k" and a number.
	IDPrefix    string `json:"idPrefix"`
	Idempotency bool   `json:"idempotency"`
	Complete    bool   `json:"complete"`
	// Interrupted is true when SIGINT or SIGTERM cut the run short.
	Interrupted   bool    `json:"interrupted"`
	WarmupSeconds float64 `json:"warmupSeconds"`
	// Seconds is the length of the measured window, which the rates and
	// latencies describe.
	Seconds       float64 `json:"seconds"`
	OrdersPerSec  float64 `json:"ordersPerSec"`
	BatchesPerSec float64 `json:"batchesPerSec"`
	// Latency is that of the window's successful batches.
	Latency latencyReport `json:"latencyMs"`
	// Window counts the requests answered in the window; Total those of the
	// whole run: warmup, window and the drain of the requests in flight
	// when the window closed.
	Window tally `json:"window"`
	Total  tally `json:"total"`
	// Completed counts the orders completed through …/completions.
	Completed        int64            `json:"completed"`
	CompletionErrors map[string]int64 `json:"completionErrors"`
	// FirstFailure is the error of a batch that got no answer (connection
	// refused, reset, TLS): the first of the first worker that had one.
	FirstFailure string `json:"firstFailure,omitempty"`
}

// latencyReport holds percentiles in milliseconds.
type latencyReport struct {
	P50     float64 `json:"p50"`
	P90     float64 `json:"p90"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Samples uint64  `json:"samples"`
}

// tally counts requests: those sent, those answered 2xx, and the others by
// status code and problem type ("503 outcome-unknown"), or timeout,
// canceled, transport when no answer came.
type tally struct {
	SentBatches int64            `json:"sentBatches"`
	SentOrders  int64            `json:"sentOrders"`
	Batches     int64            `json:"batches"`
	Orders      int64            `json:"orders"`
	Errors      map[string]int64 `json:"errors"`
}

func (t *tally) add(c *counters, errs map[string]int64) {
	t.SentBatches += c.sentBatches.Load()
	t.SentOrders += c.sentOrders.Load()
	t.Batches += c.okBatches.Load()
	t.Orders += c.okOrders.Load()
	for k, v := range errs {
		t.Errors[k] += v
	}
}

// report merges the workers' tallies; the workers have stopped.
func (l *loader) report(warmup, window time.Duration) loadReport {
	r := loadReport{
		Targets: l.cfg.Targets, Pool: l.cfg.Pool, Concurrency: l.cfg.Concurrency, Batch: l.cfg.Batch,
		IDs: l.cfg.IDs, IDPrefix: l.prefix, Idempotency: l.cfg.Idempotency, Complete: l.cfg.Complete, Interrupted: l.interrupted,
		WarmupSeconds: warmup.Seconds(), Seconds: window.Seconds(),
		Window:           tally{Errors: map[string]int64{}},
		Total:            tally{Errors: map[string]int64{}},
		CompletionErrors: map[string]int64{},
	}
	var h histogram
	for _, w := range l.workers {
		for p := range w.count {
			r.Total.add(&w.count[p], w.errs[p])
		}
		r.Window.add(&w.count[phaseWindow], w.errs[phaseWindow])
		h.merge(&w.latency)
		r.Completed += w.completed.Load()
		for k, v := range w.complErrs {
			r.CompletionErrors[k] += v
		}
		if r.FirstFailure == "" {
			r.FirstFailure = w.firstFail
		}
	}
	if s := window.Seconds(); s > 0 {
		r.OrdersPerSec = float64(r.Window.Orders) / s
		r.BatchesPerSec = float64(r.Window.Batches) / s
	}
	r.Latency = latencyReport{
		P50: ms(h.percentile(50)), P90: ms(h.percentile(90)), P99: ms(h.percentile(99)),
		Max: ms(time.Duration(h.max)), Samples: h.total,
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// writeLoadReport prints r as text, or as indented JSON.
func writeLoadReport(w io.Writer, r loadReport, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dispatch-bench run: %s, pool %s, concurrency %d, batch %d, ids %s",
		plural(len(r.Targets), "target"), r.Pool, r.Concurrency, r.Batch, r.IDs)
	if r.IDs == "random" {
		fmt.Fprintf(&b, " (%s1…)", r.IDPrefix)
	}
	if r.Idempotency {
		b.WriteString(", Idempotency-Key")
	}
	if r.Complete {
		b.WriteString(", completing")
	}
	b.WriteString("\n")
	if r.Interrupted {
		b.WriteString("interrupted   the figures cover the time until the signal\n")
	}
	fmt.Fprintf(&b, "measured      %.2f s after %.2f s warmup\n", r.Seconds, r.WarmupSeconds)
	fmt.Fprintf(&b, "orders/s      %.1f\n", r.OrdersPerSec)
	fmt.Fprintf(&b, "batches/s     %.1f\n", r.BatchesPerSec)
	fmt.Fprintf(&b, "latency       p50 %.3f ms   p90 %.3f ms   p99 %.3f ms   max %.3f ms   (%d batches)\n",
		r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.Max, r.Latency.Samples)
	fmt.Fprintf(&b, "window        %d orders in %d batches ok; errors %s\n", r.Window.Orders, r.Window.Batches, errorList(r.Window.Errors))
	fmt.Fprintf(&b, "total sent    %d orders in %d batches; ok %d orders in %d batches; errors %s\n",
		r.Total.SentOrders, r.Total.SentBatches, r.Total.Orders, r.Total.Batches, errorList(r.Total.Errors))
	if r.FirstFailure != "" {
		fmt.Fprintf(&b, "no answer     first: %s\n", r.FirstFailure)
	}
	if r.Complete {
		fmt.Fprintf(&b, "completed     %d orders; errors %s\n", r.Completed, errorList(r.CompletionErrors))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errorList prints errors by kind as "503 unavailable: 12, transport: 3",
// or "none".
func errorList(errs map[string]int64) string {
	if len(errs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(errs))
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, errs[k]))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
