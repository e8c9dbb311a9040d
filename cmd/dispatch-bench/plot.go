package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The plot mode writes its SVG by hand (writeSVG, about 130 lines with the
// scales) rather than with a plotting library, on evidence:
// gonum.org/v1/plot v0.17.0, the well-kept Go one, draws the same chart
// (log-log axes, a dashed ceiling, a legend) in 40 lines, but a program
// doing only that links 61 packages outside the standard library from 9
// modules (fonts, a LaTeX renderer, a PDF writer, a rasteriser, freetype,
// golang.org/x/image) and weighs 11.7 MB against 2.4 MB for one that
// writes XML; dispatch-bench is 12.4 MB in all. It would also drop what
// the tests read and a reader uses: the <title> of each line and point
// (hover text with the exact orders/s), a one-point ceiling drawn across
// the chart, and SVG that is text and polylines rather than flipped paths.

// plotConfig configures the plot mode.
type plotConfig struct {
	// Out is the SVG file to write.
	Out   string
	Title string
	// Ceiling is drawn as a dashed series, sorted by batch size.
	Ceiling []plotPoint
	// Inputs are the run reports to read, each with its series label.
	Inputs []plotInput
}

// plotInput is a run report's file and the label of its series.
type plotInput struct {
	Label, Path string
}

// plotPoint is one measurement: orders/s at a batch size.
type plotPoint struct {
	Batch        int
	OrdersPerSec float64
}

// plotSeries is one line of the chart, its points sorted by batch size.
type plotSeries struct {
	Name   string
	Dashed bool
	Points []plotPoint
}

// labelPattern is what may come before '=' in a plot argument to name the
// series of its reports.
var labelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)

// palette colours the series in turn.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

const (
	// defaultLabel labels the reports given without a label= prefix.
	defaultLabel = "run"
	// ceilingName and ceilingColor label and colour the -ceiling series.
	ceilingName, ceilingColor = "Redis ceiling", "#333333"
)

// parsePlotConfig reads the plot mode's command line; flags and reports may
// come in any order, and everything after "--" is a report.
func parsePlotConfig(args []string, stderr io.Writer) (plotConfig, error) {
	c := plotConfig{Title: "dispatch-bench: orders/s by batch size"}
	fs := newFlagSet("plot", stderr)
	fs.StringVar(&c.Out, "o", "", "the SVG file to write")
	fs.StringVar(&c.Title, "title", c.Title, "the chart's title")
	ceiling := fs.String("ceiling", "", `the Redis ceiling as batch:orders_per_s,…, e.g. "1:19000,100:103000"`)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: dispatch-bench plot -o out.svg [flags] [label=]report.json …\n"+
			"  reads run reports (dispatch-bench run -json) and draws orders/s by batch size, one line per\n"+
			"  label and concurrency; the label is \"run\" unless given; a file may be a glob pattern\n")
		fs.PrintDefaults()
	}
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return c, err
			}
			return c, errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			files = append(files, rest...)
			break
		}
		files, args = append(files, rest[0]), rest[1:]
	}
	var errs []error
	if c.Out == "" {
		errs = append(errs, errors.New("-o: want the SVG file to write"))
	}
	var err error
	if c.Ceiling, err = parseCeiling(*ceiling); err != nil {
		errs = append(errs, err)
	}
	if c.Inputs, err = parsePlotInputs(files); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// parseCeiling reads "batch:orders_per_s,…" into points sorted by batch.
func parseCeiling(s string) ([]plotPoint, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var pts []plotPoint
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		b, r, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("-ceiling %q: want batch:orders_per_s", item)
		}
		batch, err := strconv.Atoi(b)
		if err != nil || batch < 1 {
			return nil, fmt.Errorf("-ceiling %q: batch %q: want a whole number ≥ 1", item, b)
		}
		rate, err := strconv.ParseFloat(r, 64)
		if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
			return nil, fmt.Errorf("-ceiling %q: orders/s %q: want a positive number", item, r)
		}
		pts = append(pts, plotPoint{batch, rate})
	}
	slices.SortFunc(pts, func(a, b plotPoint) int { return a.Batch - b.Batch })
	for i := 1; i < len(pts); i++ {
		if pts[i].Batch == pts[i-1].Batch {
			return nil, fmt.Errorf("-ceiling: batch %d given twice", pts[i].Batch)
		}
	}
	return pts, nil
}

// parsePlotInputs splits the [label=]file arguments and expands the files
// that are glob patterns. A prefix with a slash is part of the file name:
// write ./a=b.json for a file named a=b.json.
func parsePlotInputs(args []string) ([]plotInput, error) {
	if len(args) == 0 {
		return nil, errors.New("no reports: give one or more run reports (dispatch-bench run -json) as [label=]file")
	}
	var out []plotInput
	for _, a := range args {
		label, path := defaultLabel, a
		if l, p, ok := strings.Cut(a, "="); ok && !strings.ContainsAny(l, `/\`) {
			if !labelPattern.MatchString(l) {
				return nil, fmt.Errorf("%q: label %q: want up to 32 letters, digits, '.', '_' or '-'", a, l)
			}
			label, path = l, p
		}
		if path == "" {
			return nil, fmt.Errorf("%q: want a file name", a)
		}
		paths := []string{path}
		if strings.ContainsAny(path, "*?[") {
			m, err := filepath.Glob(path)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", a, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("%q: no file matches", a)
			}
			paths = m
		}
		for _, p := range paths {
			out = append(out, plotInput{label, p})
		}
	}
	return out, nil
}

// runPlot reads the reports, draws them and the ceiling, and writes the SVG.
func runPlot(cfg plotConfig, stdout, stderr io.Writer) error {
	series, err := readSeries(cfg.Inputs, stderr)
	if err != nil {
		return err
	}
	if len(cfg.Ceiling) > 0 {
		series = append(series, plotSeries{Name: ceilingName, Dashed: true, Points: cfg.Ceiling})
	}
	var b strings.Builder
	writeSVG(&b, cfg.Title, series)
	if err := os.WriteFile(cfg.Out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s from %s\n", cfg.Out, plural(len(series), "series line"), plural(len(cfg.Inputs), "file"))
	return nil
}

// readSeries reads the run reports into one series per label and
// concurrency: labels in the order given, then by concurrency. A report
// without orders (a failed run) cannot be drawn on a log scale and is left
// out with a warning on stderr.
func readSeries(inputs []plotInput, stderr io.Writer) ([]plotSeries, error) {
	type key struct {
		label       string
		concurrency int
	}
	type point struct {
		key
		batch int
	}
	from := map[point]string{} // the file of each point, to find duplicates
	points := map[key][]plotPoint{}
	var labels []string
	for _, in := range inputs {
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return nil, err
		}
		var r loadReport
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: not a run report (dispatch-bench run -json): %w", in.Path, err)
		}
		if r.Batch < 1 || r.Concurrency < 1 {
			return nil, fmt.Errorf("%s: not a run report (dispatch-bench run -json): batch %d, concurrency %d", in.Path, r.Batch, r.Concurrency)
		}
		if !(r.OrdersPerSec > 0) || math.IsInf(r.OrdersPerSec, 0) {
			fmt.Fprintf(stderr, "plot: %s: left out: %v orders/s cannot be drawn on a log scale\n", in.Path, r.OrdersPerSec)
			continue
		}
		k := key{in.Label, r.Concurrency}
		if prev, dup := from[point{k, r.Batch}]; dup {
			return nil, fmt.Errorf("%s and %s: both label %s, concurrency %d, batch %d; give them different labels (label=file)",
				prev, in.Path, in.Label, r.Concurrency, r.Batch)
		}
		from[point{k, r.Batch}] = in.Path
		points[k] = append(points[k], plotPoint{r.Batch, r.OrdersPerSec})
		if !slices.Contains(labels, in.Label) {
			labels = append(labels, in.Label)
		}
	}
	keys := slices.Collect(maps.Keys(points))
	if len(keys) == 0 {
		return nil, errors.New("no report has orders/s above zero: nothing to draw")
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.label != b.label {
			return slices.Index(labels, a.label) - slices.Index(labels, b.label)
		}
		return a.concurrency - b.concurrency
	})
	series := make([]plotSeries, 0, len(keys))
	for _, k := range keys {
		pts := points[k]
		slices.SortFunc(pts, func(a, b plotPoint) int { return a.Batch - b.Batch })
		series = append(series, plotSeries{Name: fmt.Sprintf("%s, c %d", k.label, k.concurrency), Points: pts})
	}
	return series, nil
}

// chart maps batch sizes and orders/s onto the plot area, both on log10
// scales: x0…x1 and y0…y1 are the logarithms of the axes' ends.
type chart struct {
	left, top, width, height float64
	x0, x1, y0, y1           float64
	batches                  []int
}

// newChart fits the axes to the series: the x axis to their batch sizes
// with a margin, the y axis to whole decades around their orders/s.
func newChart(series []plotSeries, left, top, width, height float64) chart {
	c := chart{left: left, top: top, width: width, height: height}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			lo, hi = min(lo, p.OrdersPerSec), max(hi, p.OrdersPerSec)
			if !slices.Contains(c.batches, p.Batch) {
				c.batches = append(c.batches, p.Batch)
			}
		}
	}
	slices.Sort(c.batches)
	c.x0, c.x1 = math.Log10(float64(c.batches[0])), math.Log10(float64(c.batches[len(c.batches)-1]))
	pad := 0.05 * (c.x1 - c.x0)
	if pad == 0 {
		pad = 0.5
	}
	c.x0, c.x1 = c.x0-pad, c.x1+pad
	c.y0, c.y1 = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if c.y1 == c.y0 {
		c.y1++
	}
	return c
}

// x is the horizontal position of a batch size.
func (c chart) x(batch int) float64 {
	return c.left + (math.Log10(float64(batch))-c.x0)/(c.x1-c.x0)*c.width
}

// y is the vertical position of a rate: the larger, the higher up.
func (c chart) y(ordersPerSec float64) float64 {
	return c.top + c.height - (math.Log10(ordersPerSec)-c.y0)/(c.y1-c.y0)*c.height
}

// yTicks are the powers of ten of the y axis, with 2 and 5 times them
// when the axis spans two decades or fewer.
func (c chart) yTicks() []float64 {
	steps := []float64{1}
	if c.y1-c.y0 <= 2 {
		steps = []float64{1, 2, 5}
	}
	var ticks []float64
	for e := c.y0; e <= c.y1; e++ {
		for _, m := range steps {
			if v := m * math.Pow(10, e); math.Log10(v) <= c.y1+1e-9 {
				ticks = append(ticks, v)
			}
		}
	}
	return ticks
}

// siLabel prints a tick value as 500, 2k, 10k or 1M.
func siLabel(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// writeSVG draws the series as a line chart with a legend on the right. A
// dashed series of one point is a horizontal line across the chart.
func writeSVG(b *strings.Builder, title string, series []plotSeries) {
	const width, left, top, right, bottom = 960.0, 80.0, 50.0, 210.0, 60.0
	height := max(540, top+bottom+20*float64(len(series)+1))
	c := newChart(series, left, top, width-left-right, height-top-bottom)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(b, `<rect width="%g" height="%g" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%g" y="28" text-anchor="middle" font-size="16">%s</text>`+"\n", left+c.width/2, esc(title))
	for _, v := range c.yTicks() {
		y := c.y(v)
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y, left+c.width, y)
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", left-6, y, siLabel(v))
	}
	for _, bt := range c.batches {
		x := c.x(bt)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#dddddd"/>`+"\n", x, top, x, top+c.height)
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%d</text>`+"\n", x, top+c.height+18, bt)
	}
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333333"/>`+"\n", left, top, c.width, c.height)
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">batch size (orders per request, log scale)</text>`+"\n", left+c.width/2, height-18)
	fmt.Fprintf(b, `<text transform="translate(22 %g) rotate(-90)" text-anchor="middle">orders/s (log scale)</text>`+"\n", top+c.height/2)
	for i, s := range series {
		color, dash := palette[i%len(palette)], ""
		if s.Dashed {
			color, dash = ceilingColor, ` stroke-dasharray="6 4"`
		}
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", c.x(p.Batch), c.y(p.OrdersPerSec)))
		}
		if s.Dashed && len(s.Points) == 1 {
			y := c.y(s.Points[0].OrdersPerSec)
			pts = []string{fmt.Sprintf("%g,%.1f", left, y), fmt.Sprintf("%g,%.1f", left+c.width, y)}
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`+"\n",
			color, dash, strings.Join(pts, " "), esc(s.Name))
		for _, p := range s.Points {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s</title></circle>`+"\n", c.x(p.Batch), c.y(p.OrdersPerSec),
				color, esc(fmt.Sprintf("%s: batch %d, %.0f orders/s", s.Name, p.Batch, p.OrdersPerSec)))
		}
		lx, ly := left+c.width+16, top+10+20*float64(i)
		fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, color, dash)
		fmt.Fprintf(b, `<text x="%g" y="%g" dominant-baseline="middle">%s</text>`+"\n", lx+30, ly, esc(s.Name))
	}
	b.WriteString("</svg>\n")
}
