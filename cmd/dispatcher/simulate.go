package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/dispatcher/dispatcher/dispatch"
)

// simulate implements `dispatcher simulate`: it runs every strategy on one
// reproducible workload over the embedded store, through dispatch.Service,
// and prints how each balanced it, so that a user can choose a strategy by
// evidence. Every figure but ns/order depends only on the flags.
func simulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dispatcher simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	w := simWorkload{}
	fs.IntVar(&w.Scales, "scales", 50, "Scales in the pool")
	fs.IntVar(&w.Batches, "batches", 400, "batches to dispatch, one per 100 ms tick")
	fs.Float64Var(&w.Load, "load", 0.95, "orders offered per tick, as a share of the pool's capacity")
	fs.IntVar(&w.Keys, "keys", 500, "distinct order keys")
	fs.Uint64Var(&w.Seed, "seed", 1, "seed of the workload")
	fs.BoolVar(&w.Equal, "equal", false, "give every Scale weight 1 and the same speed")
	fs.Float64Var(&w.SpeedError, "speed-error", 0.3, "without -equal, how far a Scale's speed may be from its weight (0.3: ±30%)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("simulate: unexpected argument %q", fs.Arg(0))
	}
	if err := w.validate(); err != nil {
		return err
	}
	results := make([]simResult, 0, len(dispatch.Strategies))
	for _, st := range dispatch.Strategies {
		r, err := w.run(ctx, st)
		if err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		results = append(results, r)
	}
	return w.print(stdout, results)
}

// validate checks the flags.
func (w simWorkload) validate() error {
	switch {
	case w.Scales < 8 || w.Scales > 100_000:
		return errors.New("simulate: -scales must be 8 to 100000")
	case w.Batches < 3:
		return errors.New("simulate: -batches must be at least 3")
	case !(w.Load > 0 && w.Load <= 10):
		return errors.New("simulate: -load must be above 0 and at most 10")
	case w.Keys < 1:
		return errors.New("simulate: -keys must be at least 1")
	case !(w.SpeedError >= 0 && w.SpeedError < 1):
		return errors.New("simulate: -speed-error must be at least 0 and below 1")
	}
	return nil
}

// print writes the workload and one row per strategy.
func (w simWorkload) print(out io.Writer, results []simResult) error {
	weights := fmt.Sprintf("weights 1–5, speeds up to ±%.0f%% off their weight", 100*w.SpeedError)
	switch {
	case w.Equal:
		weights = "weight 1, equal speeds"
	case w.SpeedError == 0:
		weights = "weights 1–5, speeds as their weight"
	}
	fmt.Fprintf(out, "%d Scales (%s, initial loads 0–20), %d batches of ~%.0f%% of capacity, %d keys, seed %d;\n",
		w.Scales, weights, w.Batches, 100*w.Load, w.Keys, w.Seed)
	fmt.Fprintf(out, "Scale s%03d drains at batch %d and returns at batch %d (slow start %s).\n",
		7%w.Scales, w.Batches/3, 2*w.Batches/3, simSlowStart)
	fmt.Fprintln(out, "spread, max/mean, w-imbalance: means over the second half, right after each batch, over active Scales.")
	fmt.Fprintln(out)
	// Right-aligned numbers; the names are padded so that they stay left.
	width := len("strategy")
	for _, r := range results {
		width = max(width, len(r.Strategy))
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tspread\tmax/mean\tw-imbalance\tmean ms\tkey moves\tns/order\t\n", width, "strategy")
	for _, r := range results {
		fmt.Fprintf(tw, "%-*s\t%.1f\t%.2f\t%.2f\t%.0f\t%.2f%%\t%.0f\t\n",
			width, r.Strategy, r.Spread, r.MaxMean, r.WeightedImbalance, r.MeanMs, 100*r.KeyMoves, r.NsPerOrder)
	}
	return tw.Flush()
}
