package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressSample is what the progress line shows: the phase of the run,
// running totals that it shows as rates over the last second, and the
// errors so far.
type progressSample struct {
	phase  string
	totals []namedTotal
	errors int64
}

// namedTotal is a running total, such as "orders" and how many succeeded.
type namedTotal struct {
	name string
	n    int64
}

// progress prints a progress line once a second: elapsed time, the rates
// over the last second and the errors so far. On a terminal the line is
// rewritten in place; elsewhere each second gets a line of its own.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// startProgress starts printing what sample returns to w, unless enabled is
// false. Stop it with stop.
func startProgress(w io.Writer, enabled bool, start time.Time, sample func() progressSample) *progress {
	p := &progress{done: make(chan struct{})}
	if !enabled {
		return p
	}
	inPlace := isTerminal(w)
	p.wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last, lastAt := sample(), start
		for {
			select {
			case <-p.done:
				if inPlace {
					fmt.Fprintln(w)
				}
				return
			case now := <-tick.C:
				s := sample()
				line := progressLine(now.Sub(start), now.Sub(lastAt), last, s)
				if inPlace {
					fmt.Fprintf(w, "\r%s\x1b[K", line)
				} else {
					fmt.Fprintln(w, line)
				}
				last, lastAt = s, now
			}
		}
	})
	return p
}

// progressLine formats cur, with rates over the dt since prev, under the
// phase of that interval: "warmup→measure" for one in which it changed.
func progressLine(elapsed, dt time.Duration, prev, cur progressSample) string {
	var b strings.Builder
	phase := cur.phase
	if prev.phase != "" && prev.phase != cur.phase {
		phase = prev.phase + "→" + cur.phase
	}
	fmt.Fprintf(&b, "%6.1fs %-7s", elapsed.Seconds(), phase)
	for i, t := range cur.totals {
		rate := 0.0
		if i < len(prev.totals) && dt > 0 {
			rate = float64(t.n-prev.totals[i].n) / dt.Seconds()
		}
		fmt.Fprintf(&b, "  %s/s %9.0f", t.name, rate)
	}
	fmt.Fprintf(&b, "  errors %d", cur.errors)
	return b.String()
}

// stop ends the progress line and waits until it is no longer written.
func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}

// isTerminal reports whether w is a character device, such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
