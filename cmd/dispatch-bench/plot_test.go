package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeReport writes a run report with the given figures to dir/name and
// returns its path.
func writeReport(t *testing.T, dir, name string, batch, concurrency int, ordersPerSec float64) string {
	t.Helper()
	var b bytes.Buffer
	rep := loadReport{Targets: []string{"http://127.0.0.1:1"}, Pool: "p", Batch: batch, Concurrency: concurrency, OrdersPerSec: ordersPerSec}
	if err := writeJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlotArgs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c-svc-1-16.json", "c-svc-10-16.json", "other.json"} {
		writeReport(t, dir, name, 1, 1, 1)
	}
	glob := filepath.Join(dir, "c-svc-*.json")
	cfg, err := parsePlotConfig([]string{"-o", "x.svg", "svc=a.json", "b.json", "-ceiling", " 100:5e4, 1:20000", "noop=" + glob, "./k=v.json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	wantInputs := []plotInput{{"svc", "a.json"}, {"run", "b.json"},
		{"noop", filepath.Join(dir, "c-svc-1-16.json")}, {"noop", filepath.Join(dir, "c-svc-10-16.json")}, {"run", "./k=v.json"}}
	if fmt.Sprint(cfg.Inputs) != fmt.Sprint(wantInputs) {
		t.Errorf("inputs: got %v, want %v", cfg.Inputs, wantInputs)
	}
	if want := []plotPoint{{1, 20000}, {100, 50000}}; fmt.Sprint(cfg.Ceiling) != fmt.Sprint(want) {
		t.Errorf("ceiling: got %v, want %v (sorted by batch)", cfg.Ceiling, want)
	}
	if cfg.Out != "x.svg" {
		t.Errorf("-o: got %q, want x.svg (a flag after the reports counts too)", cfg.Out)
	}
	cfg, err = parsePlotConfig([]string{"-o", "x.svg", "--", "-dash.json"}, io.Discard)
	if err != nil || len(cfg.Inputs) != 1 || cfg.Inputs[0].Path != "-dash.json" {
		t.Errorf("after --: got %v, %v; want the one report -dash.json", cfg.Inputs, err)
	}
}

func TestPlotArgErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the error message
	}{
		{[]string{"a.json"}, "-o: want the SVG file"},
		{[]string{"-o", "x.svg"}, "no reports"},
		{[]string{"-o", "x.svg", "=a.json"}, `label ""`},
		{[]string{"-o", "x.svg", "s p=a.json"}, `label "s p"`},
		{[]string{"-o", "x.svg", "svc="}, "want a file name"},
		{[]string{"-o", "x.svg", "svc=/no/such/dir/*.json"}, "no file matches"},
		{[]string{"-o", "x.svg", "-ceiling", "100", "a.json"}, `-ceiling "100": want batch:orders_per_s`},
		{[]string{"-o", "x.svg", "-ceiling", "0:5", "a.json"}, `batch "0": want a whole number ≥ 1`},
		{[]string{"-o", "x.svg", "-ceiling", "1:-3", "a.json"}, `orders/s "-3": want a positive number`},
		{[]string{"-o", "x.svg", "-ceiling", "1:NaN", "a.json"}, `orders/s "NaN"`},
		{[]string{"-o", "x.svg", "-ceiling", "1:5,", "a.json"}, `-ceiling "": want batch:orders_per_s`},
		{[]string{"-o", "x.svg", "-ceiling", "1:5,1:6", "a.json"}, "batch 1 given twice"},
	}
	for _, tt := range tests {
		_, err := parsePlotConfig(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got error %v, want one with %q", tt.args, err, tt.want)
		}
	}
	for _, args := range [][]string{{"-h"}, {"-no-such-flag"}} {
		want := map[string]error{"-h": flag.ErrHelp}[args[0]]
		if want == nil {
			want = errUsage
		}
		if _, err := parsePlotConfig(args, io.Discard); !errors.Is(err, want) {
			t.Errorf("%q: got %v, want %v", args, err, want)
		}
	}
}

func TestPlotBadReports(t *testing.T) {
	dir := t.TempDir()
	a := writeReport(t, dir, "a.json", 10, 4, 100)
	b := writeReport(t, dir, "b.json", 10, 4, 200)
	zero := writeReport(t, dir, "zero.json", 1, 4, 0)
	notJSON := filepath.Join(dir, "x.json")
	os.WriteFile(notJSON, []byte("orders/s 12\n"), 0o644)
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, []byte("{}"), 0o644)
	out := filepath.Join(dir, "out.svg")
	tests := []struct {
		files []string
		want  string
	}{
		{[]string{filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{notJSON}, "not a run report"},
		{[]string{empty}, "not a run report (dispatch-bench run -json): batch 0, concurrency 0"},
		{[]string{a, b}, "both label run, concurrency 4, batch 10"},
		{[]string{zero}, "nothing to draw"},
	}
	for _, tt := range tests {
		err := run(context.Background(), append([]string{"plot", "-o", out}, tt.files...), noEnv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got error %v, want one with %q", tt.files, err, tt.want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed plot wrote %s (stat: %v)", out, err)
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"plot", "-o", out, "x=" + a, "y=" + b, zero}, noEnv, io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), zero+": left out") {
		t.Errorf("stderr: got %q, want a warning that %s is left out", stderr.String(), zero)
	}
}

// svgLine is a polyline of the chart: its title and points.
type svgLine struct {
	title, dash string
	x, y        []float64
}

// decodeSVG decodes the whole SVG as XML, failing the test if it is not
// well formed, and returns its polylines and the text of its text elements.
func decodeSVG(t *testing.T, data []byte) (lines []svgLine, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var inLine, inText, inTitle bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "polyline":
				inLine = true
				var l svgLine
				for _, a := range tok.Attr {
					switch a.Name.Local {
					case "stroke-dasharray":
						l.dash = a.Value
					case "points":
						for xy := range strings.FieldsSeq(a.Value) {
							xs, ys, _ := strings.Cut(xy, ",")
							x, err1 := strconv.ParseFloat(xs, 64)
							y, err2 := strconv.ParseFloat(ys, 64)
							if err1 != nil || err2 != nil {
								t.Fatalf("polyline point %q is not x,y", xy)
							}
							l.x, l.y = append(l.x, x), append(l.y, y)
						}
					}
				}
				lines = append(lines, l)
			case "text":
				inText = true
			case "title":
				inTitle = true
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "polyline":
				inLine = false
			case "text":
				inText = false
			case "title":
				inTitle = false
			}
		case xml.CharData:
			if inLine && inTitle {
				lines[len(lines)-1].title += string(tok)
			}
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	return lines, texts
}

func TestPlotSVG(t *testing.T) {
	dir := t.TempDir()
	svc := []string{
		"svc=" + writeReport(t, dir, "svc-100-16.json", 100, 16, 14000),
		"svc=" + writeReport(t, dir, "svc-1-16.json", 1, 16, 2000),
		"svc=" + writeReport(t, dir, "svc-10-16.json", 10, 16, 8000),
		"svc=" + writeReport(t, dir, "svc-1-4.json", 1, 4, 1500),
	}
	noop := "noop=" + filepath.Join(dir, "noop-*.json")
	writeReport(t, dir, "noop-1-16.json", 1, 16, 10000)
	writeReport(t, dir, "noop-100-16.json", 100, 16, 1e6)
	out := filepath.Join(dir, "out.svg")
	args := append([]string{"plot", "-o", out, "-title", `A <b> & "c"`, "-ceiling", "1:19000,10:60000,100:103000"}, svc...)
	stdout, err := runTool(t, context.Background(), append(args, noop)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "wrote "+out+": 4 series lines from 6 files") {
		t.Errorf("stdout: got %q, want a line naming the file, 4 series and 6 files", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines, texts := decodeSVG(t, data)

	want := []struct {
		title  string
		points int
	}{{"svc, c 4", 1}, {"svc, c 16", 3}, {"noop, c 16", 2}, {"Redis ceiling", 3}}
	if len(lines) != len(want) {
		t.Fatalf("got %d polylines, want %d: %+v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l.title != w.title || len(l.x) != w.points {
			t.Errorf("polyline %d: got %q with %d points, want %q with %d", i, l.title, len(l.x), w.title, w.points)
		}
		for j := 1; j < len(l.x); j++ {
			if !(l.x[j] > l.x[j-1]) {
				t.Errorf("%s: x %v is not increasing", l.title, l.x)
			}
		}
		if (l.dash != "") != (w.title == ceilingName) {
			t.Errorf("%s: dash %q, want one for the ceiling only", l.title, l.dash)
		}
	}
	// svc, c 16 rises with the batch size, so its y falls (SVG y grows down).
	if y := lines[1].y; !(y[0] > y[1] && y[1] > y[2]) {
		t.Errorf("svc, c 16: y %v, want decreasing as orders/s grow", y)
	}
	joined := strings.Join(texts, "|")
	for _, s := range []string{`A <b> & "c"`, "1k", "10k", "100k", "1M", "Redis ceiling", "noop, c 16", "batch size"} {
		if !strings.Contains(joined, s) {
			t.Errorf("the SVG's text lacks %q: %s", s, joined)
		}
	}
}

func TestPlotOneCeilingPointIsHorizontal(t *testing.T) {
	dir := t.TempDir()
	a := writeReport(t, dir, "a.json", 1, 8, 500)
	b := writeReport(t, dir, "b.json", 1000, 8, 50000)
	out := filepath.Join(dir, "out.svg")
	if _, err := runTool(t, context.Background(), "plot", "-o", out, "-ceiling", "1:20000", a, b); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := decodeSVG(t, data)
	if len(lines) != 2 {
		t.Fatalf("got %d polylines, want 2", len(lines))
	}
	c, run := lines[1], lines[0]
	if len(c.x) != 2 || c.y[0] != c.y[1] || !(c.x[0] < run.x[0] && c.x[1] > run.x[1]) {
		t.Errorf("ceiling: got x %v y %v, want a horizontal line across the run's x %v", c.x, c.y, run.x)
	}
	if !(run.y[0] > c.y[0] && c.y[0] > run.y[1]) {
		t.Errorf("y: run %v, ceiling %v; want 20000 orders/s between 500 and 50000", run.y, c.y[0])
	}
}

func TestChartScales(t *testing.T) {
	series := []plotSeries{{Points: []plotPoint{{1, 1500}, {10, 9000}, {1000, 250000}}}}
	c := newChart(series, 80, 50, 600, 400)
	if !(c.y(250000) < c.y(9000) && c.y(9000) < c.y(1500)) {
		t.Errorf("y(250000) %v, y(9000) %v, y(1500) %v: want a larger orders/s higher up (smaller y)", c.y(250000), c.y(9000), c.y(1500))
	}
	if !(c.x(1) >= 80 && c.x(1) < c.x(10) && c.x(10) < c.x(1000) && c.x(1000) <= 680) {
		t.Errorf("x(1) %v, x(10) %v, x(1000) %v: want increasing within 80…680", c.x(1), c.x(10), c.x(1000))
	}
	// log scale: 1 → 10 is half of 10 → 1000.
	if d1, d2 := c.x(10)-c.x(1), c.x(1000)-c.x(10); d2-2*d1 > 1e-9 || 2*d1-d2 > 1e-9 {
		t.Errorf("x steps %v and %v: want the second twice the first", d1, d2)
	}
	if c.y(1000) != 450 || c.y(1e6) != 50 {
		t.Errorf("y(1k) %v, y(1M) %v: want the axis from 1k at the bottom (450) to 1M at the top (50)", c.y(1000), c.y(1e6))
	}
	var labels []string
	for _, v := range c.yTicks() {
		labels = append(labels, siLabel(v))
	}
	if got, want := strings.Join(labels, " "), "1k 10k 100k 1M"; got != want {
		t.Errorf("y ticks over three decades: got %s, want %s", got, want)
	}
	c = newChart([]plotSeries{{Points: []plotPoint{{10, 300}, {100, 4000}}}}, 0, 0, 100, 100)
	labels = labels[:0]
	for _, v := range c.yTicks() {
		labels = append(labels, siLabel(v))
	}
	if got, want := strings.Join(labels, " "), "100 200 500 1k 2k 5k 10k"; got != want {
		t.Errorf("y ticks over two decades: got %s, want %s", got, want)
	}
	if fmt.Sprint(c.batches) != "[10 100]" {
		t.Errorf("x ticks: got %v, want the batch sizes [10 100]", c.batches)
	}
}

// TestPlotReadsRunReports plots the -json output of the run mode itself, so
// that a change of the report's fields shows here.
func TestPlotReadsRunReports(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.svg")
	var args []string
	for _, b := range []int{1, 5} {
		srv := httptest.NewServer(newFakeService(0))
		defer srv.Close()
		data, err := runTool(t, context.Background(), "run", "-json", "-progress=false", "-url", srv.URL,
			"-concurrency", "2", "-batch", strconv.Itoa(b), "-duration", "200ms")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("r%d.json", b))
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "fake="+path)
	}
	if _, err := runTool(t, context.Background(), append([]string{"plot", "-o", out}, args...)...); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	if lines, _ := decodeSVG(t, data); len(lines) != 1 || lines[0].title != "fake, c 2" || len(lines[0].x) != 2 {
		t.Errorf("got %+v, want one line fake, c 2 of 2 points", lines)
	}
}
