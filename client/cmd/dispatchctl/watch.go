package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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
type snapshot struct {
	At         time.Time      `json:"at"`
	Pool       *client.Pool   `json:"pool"`
	Scales     []client.Scale `json:"scales"`
	ScaleCount int64          `json:"scaleCount"`
	Error      string         `json:"error,omitempty"`
}

// watch shows the pool's Scales as bars, polling the Scale list every
// -interval and redrawing the screen in place, until interrupted (or -n
// frames). The service has no watch stream yet (DESIGN §9); polling reads
// one page: the Scales that fit on the screen, least loaded first.
func watch(ctx context.Context, e *env, a []string) error {
	pool := a[0]
	if fInterval < 100*time.Millisecond {
		return usagef("watch: -interval %v: at least 100ms", fInterval)
	}
	out, isTerm := e.stdout, isTerminal(e.stdout)
	width, height := termSize(e.stdout, e.getenv)
	read := func() snapshot {
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
	first := read()
	if first.Error != "" {
		// Nothing to show: the pool or the service is not there.
		_, err := e.c.GetPool(ctx, pool)
		if err != nil {
			return err
		}
	}
	if !e.json {
		fmt.Fprint(out, escHideCursor+escClear)
		defer fmt.Fprint(out, escShowCursor)
	}
	tick := time.NewTicker(fInterval)
	defer tick.Stop()
	s := first
	for n := 1; ; n++ {
		if e.json {
			if err := json.NewEncoder(out).Encode(s); err != nil {
				return err
			}
		} else {
			lines := frame(s, width, height, fInterval, isTerm)
			fmt.Fprint(out, escHome+strings.Join(lines, escClearLine+"\n")+escClearLine+"\n"+escClearBelow)
		}
		if fFrames > 0 && n >= fFrames {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		s = read()
		if ctx.Err() != nil {
			return nil
		}
	}
}

// frame renders one snapshot in width × height characters: a header, one
// bar per Scale (outstanding orders █, baseLoad ▒, maxOrders marked |),
// and a footer. colour adds ANSI colours by state.
func frame(s snapshot, width, height int, every time.Duration, colour bool) []string {
	width = max(width, 40) // narrower, rows may wrap
	var lines []string
	head := "dispatchctl watch"
	if s.Pool != nil {
		head += fmt.Sprintf(" %s — %s, %d Scales", s.Pool.Name, s.Pool.Strategy, s.ScaleCount)
	}
	head += fmt.Sprintf(" — %s, every %v (Ctrl-C stops)", s.At.Local().Format("15:04:05"), every)
	lines = append(lines, clip(head, width))
	if s.Error != "" {
		return append(lines, clip("error: "+s.Error, width))
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
	rows := max(1, height-4)
	for i, sc := range s.Scales {
		if i == rows {
			break
		}
		bar := bar(sc, top, barW)
		if colour {
			bar = stateColour[sc.State] + bar + escReset
		}
		lines = append(lines, fmt.Sprintf("%-*s %-9s %s %*d %*d %*s",
			idW, clip(sc.CompID, idW), sc.State, bar, numW, sc.OrderCount, numW, sc.Outstanding, numW, maxOrders(sc.MaxOrders)))
	}
	shown := min(len(s.Scales), rows)
	if int64(shown) < s.ScaleCount {
		lines = append(lines, fmt.Sprintf("the %d least loaded of %d Scales", shown, s.ScaleCount))
	} else {
		lines = append(lines, fmt.Sprintf("%d Scales", s.ScaleCount))
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
