package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dispatcher/dispatcher/client"
)

// ANSI sequences of the watch view.
const (
	escHome       = "\x1b[H"
	escClear      = "\x1b[2J"
	escClearLine  = "\x1b[K"
	escClearBelow = "\x1b[J"
	escHideCursor = "\x1b[?25l"
	escShowCursor = "\x1b[?25h"
	escReset      = "\x1b[0m"
)

// stateColour colours a Scale's bar by its state.
var stateColour = map[client.ScaleState]string{
	client.ScaleActive:   "\x1b[32m", // green
	client.ScaleDraining: "\x1b[33m", // yellow
	client.ScaleDown:     "\x1b[31m", // red
}

// snapshot is what one frame shows; with -o json each is one line.
// Counters and Histogram come with the watch stream only (Stream); polling
// reads the least loaded Scales that fit on the screen.
type snapshot struct {
	At         time.Time         `json:"at"`
	Pool       *client.Pool      `json:"pool"`
	Scales     []client.Scale    `json:"scales"`
	ScaleCount int64             `json:"scaleCount"`
	Stream     bool              `json:"stream"`
	Counters   *client.Counters  `json:"counters,omitempty"`
	Histogram  *client.Histogram `json:"histogram,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// Bounds of the watch stream's interval (DESIGN §9).
const (
	streamMinInterval = 250 * time.Millisecond
	streamMaxInterval = time.Minute
)

// watch shows the pool's Scales as bars, redrawn in place until
// interrupted (or -n frames). It reads the pool's watch stream (DESIGN §9),
// one frame per snapshot at most every -interval (250ms to 1m there); a
// service without the stream (404 for the route itself, an older server)
// is polled instead: the pool and one page of its Scale list, the Scales
// that fit on the screen, least loaded first, every -interval.
func watch(ctx context.Context, e *env, a []string) error {
	pool := a[0]
	if fInterval < 100*time.Millisecond {
		return usagef("watch: -interval %v: at least 100ms", fInterval)
	}
	every := min(max(fInterval, streamMinInterval), streamMaxInterval).Truncate(time.Millisecond)
	next, stop := iter.Pull2(e.c.WatchPool(ctx, pool, &client.WatchOptions{Interval: every}))
	defer stop()
	snap, err, ok := next()
	if !ok {
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, &client.Error{Status: http.StatusNotFound}) || errors.Is(err, client.ErrPoolNotFound) {
			return err
		}
		stop()
		return poll(ctx, e, pool)
	}
	first := fromStream(snap)
	read := func() (snapshot, error) {
		for {
			snap, err, ok := next()
			if !ok || ctx.Err() != nil {
				return snapshot{}, io.EOF
			}
			var pe *client.Error
			switch {
			case err == nil:
				return fromStream(snap), nil
			case errors.As(err, &pe) && !errors.Is(err, client.ErrPoolNotFound):
				// A problem within the stream (the store did not answer):
				// shown, and the stream goes on.
				s := first
				s.At, s.Error = time.Now().UTC(), err.Error()
				return s, nil
			default:
				// The pool was deleted, or the stream ended.
				return snapshot{}, err
			}
		}
	}
	return show(ctx, e, first, read, every)
}

// fromStream makes a frame's snapshot of one of the stream's.
func fromStream(s client.Snapshot) snapshot {
	c := s.Counters
	return snapshot{
		At:         s.At,
		Pool:       &client.Pool{Name: s.Pool, Strategy: s.Strategy},
		Scales:     s.Scales,
		ScaleCount: int64(s.ScaleCount),
		Stream:     true,
		Counters:   &c,
		Histogram:  s.Histogram,
	}
}

// poll is watch on a service without the watch stream: it reads the pool
// and the first page of its Scale list every -interval.
func poll(ctx context.Context, e *env, pool string) error {
	_, height := termSize(e.stdout, e.getenv)
	read1 := func() snapshot {
		s := snapshot{At: time.Now().UTC()}
		p, err := e.c.GetPool(ctx, pool)
		if err != nil {
			s.Error = err.Error()
			return s
		}
		rows := max(1, height-4)
		if e.json {
			rows = 1000
		}
		l, err := e.c.ListScalesPage(ctx, pool, &client.ListOptions{Limit: rows})
		if err != nil {
			s.Error = err.Error()
			return s
		}
		s.Pool, s.Scales, s.ScaleCount = p, l.Scales, p.ScaleCount
		return s
	}
	first := read1()
	if first.Error != "" {
		// Nothing to show: the pool or the service is not there.
		_, err := e.c.GetPool(ctx, pool)
		if err != nil {
			return err
		}
	}
	tick := time.NewTicker(fInterval)
	defer tick.Stop()
	read := func() (snapshot, error) {
		select {
		case <-ctx.Done():
			return snapshot{}, io.EOF
		case <-tick.C:
		}
		s := read1()
		if ctx.Err() != nil {
			return snapshot{}, io.EOF
		}
		return s, nil
	}
	return show(ctx, e, first, read, fInterval)
}

// show draws first, then each snapshot read returns, until read returns
// an error (io.EOF: interrupted, a clean end) or -n frames were drawn.
func show(ctx context.Context, e *env, first snapshot, read func() (snapshot, error), every time.Duration) error {
	out, isTerm := e.stdout, isTerminal(e.stdout)
	width, height := termSize(e.stdout, e.getenv)
	if !e.json {
		fmt.Fprint(out, escHideCursor+escClear)
		defer fmt.Fprint(out, escShowCursor)
	}
	s := first
	for n := 1; ; n++ {
		if e.json {
			if err := json.NewEncoder(out).Encode(s); err != nil {
				return err
			}
		} else {
			lines := frame(s, width, height, every, isTerm)
			fmt.Fprint(out, escHome+strings.Join(lines, escClearLine+"\n")+escClearLine+"\n"+escClearBelow)
		}
		if fFrames > 0 && n >= fFrames {
			return nil
		}
		var err error
		s, err = read()
		if err == io.EOF || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// frame renders one snapshot in width × height characters: a header, the
// counters (from the stream), one bar per Scale (outstanding orders █,
// baseLoad ▒, maxOrders marked |), and a footer saying how many Scales
// are not shown. colour adds ANSI colours by state.
func frame(s snapshot, width, height int, every time.Duration, colour bool) []string {
	width = max(width, 40) // narrower, rows may wrap
	var lines []string
	head := "dispatchctl watch"
	if s.Pool != nil {
		head += fmt.Sprintf(" %s — %s, %d Scales", s.Pool.Name, s.Pool.Strategy, s.ScaleCount)
	}
	how := "polled every"
	if s.Stream {
		how = "streamed every"
	}
	head += fmt.Sprintf(" — %s, %s %v (Ctrl-C stops)", s.At.Local().Format("15:04:05"), how, every)
	lines = append(lines, clip(head, width))
	if s.Error != "" {
		return append(lines, clip("error: "+s.Error, width))
	}
	rows := max(1, height-4)
	if c := s.Counters; c != nil {
		lines = append(lines, clip(fmt.Sprintf("dispatched %d · completed %d · cancelled %d · moved %d · failed %d",
			c.Dispatched, c.Completed, c.Cancelled, c.Moved, c.Failed), width))
		rows = max(1, rows-1)
	}
	idW := 6
	var top int64 = 1
	for _, sc := range s.Scales {
		idW = max(idW, utf8.RuneCountInString(sc.CompID))
		top = max(top, sc.OrderCount, sc.MaxOrders)
	}
	idW = min(idW, 24)
	// A row: compId, state (9), bar, three numbers, and a space between
	// each; the bar takes what is left, at least 10 cells, taken from a
	// long compId column first.
	const numW = 6
	barW := width - idW - 14 - 3*numW
	if barW < 10 {
		idW = max(4, idW-(10-barW))
		barW = max(1, width-idW-14-3*numW)
	}
	lines = append(lines, clip(fmt.Sprintf("%-*s %-9s %-*s %*s %*s %*s", idW, "COMPID", "STATE", barW, "█ outstanding ▒ baseLoad | maxOrders", numW, "COUNT", numW, "OUT", numW, "MAX"), width))
	row := func(sc client.Scale) string {
		bar := bar(sc, top, barW)
		if colour {
			bar = stateColour[sc.State] + bar + escReset
		}
		return fmt.Sprintf("%-*s %-9s %s %*d %*d %*s",
			idW, clip(sc.CompID, idW), sc.State, bar, numW, sc.OrderCount, numW, sc.Outstanding, numW, maxOrders(sc.MaxOrders))
	}
	// Polling read the least loaded; the stream sends them all, or the 500
	// least and the 500 most loaded (sorted): when they do not fit, the
	// least loaded at the top, the most loaded at the bottom, and a line
	// between them for those not shown.
	sc, gap := s.Scales, 0
	if !s.Stream || len(sc) <= rows || rows < 3 {
		sc = sc[:min(len(sc), rows)]
	} else {
		lo := rows / 2
		hi := rows - 1 - lo
		sc, gap = append(sc[:lo:lo], sc[len(sc)-hi:]...), lo
	}
	notShown := s.ScaleCount - int64(len(sc))
	for i, x := range sc {
		if gap > 0 && i == gap {
			lines = append(lines, clip(fmt.Sprintf("%-*s ⋮ %d not shown", idW, "", notShown), width))
		}
		lines = append(lines, row(x))
	}
	switch {
	case notShown <= 0:
		lines = append(lines, fmt.Sprintf("%d Scales", s.ScaleCount))
	case gap > 0:
		lines = append(lines, clip(fmt.Sprintf("the %d least and %d most loaded of %d Scales; %d not shown",
			gap, len(sc)-gap, s.ScaleCount, notShown), width))
	case s.Histogram != nil && len(sc) == len(s.Scales):
		lines = append(lines, clip(fmt.Sprintf("the %d least and %d most loaded of %d Scales; %d not shown",
			len(sc)/2, len(sc)-len(sc)/2, s.ScaleCount, notShown), width))
	default:
		lines = append(lines, clip(fmt.Sprintf("the %d least loaded of %d Scales; %d not shown", len(sc), s.ScaleCount, notShown), width))
	}
	return lines
}

// bar draws a Scale's load in w cells on a scale of top orders.
func bar(s client.Scale, top int64, w int) string {
	cells := func(n int64) int { return int((n*int64(w) + top/2) / top) }
	out, base := cells(s.Outstanding), cells(s.Outstanding+s.BaseLoad)
	b := make([]rune, w)
	for i := range b {
		switch {
		case i < out:
			b[i] = '█'
		case i < base:
			b[i] = '▒'
		default:
			b[i] = ' '
		}
	}
	if s.MaxOrders > 0 {
		if m := cells(s.MaxOrders) - 1; m >= 0 && m < w {
			b[m] = '|'
		}
	}
	return string(b)
}

// clip cuts s to at most w runes.
func clip(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:w-1]) + "…"
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// termSize returns the terminal's columns and rows: from the terminal
// itself where the platform tells, else $COLUMNS and $LINES, else 80×24.
func termSize(w io.Writer, getenv func(string) string) (int, int) {
	if f, ok := w.(*os.File); ok {
		if c, r, ok := ttySize(f); ok {
			return c, r
		}
	}
	c, errC := strconv.Atoi(getenv("COLUMNS"))
	r, errR := strconv.Atoi(getenv("LINES"))
	if errC != nil || c <= 0 {
		c = 80
	}
	if errR != nil || r <= 0 {
		r = 24
	}
	return c, r
}
