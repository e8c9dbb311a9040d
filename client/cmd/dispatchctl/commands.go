package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dispatcher/dispatcher/client"
)

// commands lists every command; DESIGN §10 names them.
func commands() []command {
	return []command{
		{name: "health", help: "the service's liveness and readiness", nargs: [2]int{0, 0}, run: health},

		{name: "pools", help: "list the pools", nargs: [2]int{0, 0}, run: listPools},
		{name: "pools get", args: "POOL", help: "show a pool", nargs: [2]int{1, 1}, run: getPool},
		{name: "pools put", args: "POOL", help: "create or update a pool (absent flags keep their value)", nargs: [2]int{1, 1}, flags: poolFlags, run: putPool},
		{name: "pools rm", args: "POOL", help: "delete a pool and all its state", nargs: [2]int{1, 1}, run: deletePool},

		{name: "scales", args: "POOL", help: "list a pool's Scales, least loaded first", nargs: [2]int{1, 1}, run: listScales},
		{name: "scales get", args: "POOL COMPID", help: "show a Scale", nargs: [2]int{2, 2}, run: getScale},
		{name: "scales put", args: "POOL COMPID", help: "register or update a Scale (absent flags keep their value)", nargs: [2]int{2, 2}, flags: scaleFlags, run: putScale},
		{name: "scales rm", args: "POOL COMPID", help: "delete a Scale (-force cancels its orders)", nargs: [2]int{2, 2}, flags: rmFlags, run: deleteScale},
		{name: "scales down", args: "POOL COMPID", help: "mark a Scale down: it gets no orders", nargs: [2]int{2, 2}, run: setState(client.ScaleDown)},
		{name: "scales up", args: "POOL COMPID", help: "mark a Scale active again", nargs: [2]int{2, 2}, run: setState(client.ScaleActive)},
		{name: "scales drain", args: "POOL COMPID", help: "mark a Scale draining: it keeps its orders, gets no new ones", nargs: [2]int{2, 2}, run: setState(client.ScaleDraining)},
		{name: "scales reassign", args: "POOL COMPID", help: "move a down Scale's outstanding orders to the others", nargs: [2]int{2, 2}, run: reassign},
		{name: "scales heartbeat", args: "POOL COMPID", help: "renew a Scale's lease (a worker's heartbeat)", nargs: [2]int{2, 2}, flags: heartbeatFlags, run: heartbeat},
		{name: "scales orders", args: "POOL COMPID", help: "list a Scale's outstanding orders, oldest first", nargs: [2]int{2, 2}, run: scaleOrders},

		{name: "dispatch", args: "POOL [ORDER-ID…]", help: "dispatch one batch: ids as arguments, else JSON lines on stdin ({\"id\":…,\"key\":…})", nargs: [2]int{1, -1}, flags: dispatchFlags, run: dispatchBatch},
		{name: "batches get", args: "POOL BATCH-ID", help: "show a recorded batch", nargs: [2]int{2, 2}, run: getBatch},

		{name: "orders get", args: "POOL ORDER-ID", help: "show an order", nargs: [2]int{2, 2}, run: getOrder},
		{name: "orders complete", args: "POOL ORDER-ID", help: "complete an order", nargs: [2]int{2, 2}, flags: completeFlags, run: completeOrder},
		{name: "orders cancel", args: "POOL ORDER-ID", help: "cancel an order", nargs: [2]int{2, 2}, run: cancelOrder},
		{name: "orders fail", args: "POOL ORDER-ID COMPID", help: "report that the order could not be handed to COMPID: it moves elsewhere", nargs: [2]int{3, 3}, flags: failFlags, run: failOrder},

		{name: "table", args: "POOL", help: "the waterfill table the next batch starts from", nargs: [2]int{1, 1}, run: showTable},
		{name: "watch", args: "POOL", help: "a live view of the pool's Scales as bars, redrawn in place", nargs: [2]int{1, 1}, flags: watchFlags, run: watch},
	}
}

// Flags of the commands that have some; each command line parses once, so
// package variables are enough.
var (
	fStrategy   string
	fSlowStart  int64
	fWeight     int64
	fState      string
	fMaxOrders  int64
	fOrderCount int64
	fForce      bool
	fKey        string
	fDryRun     bool
	fDuration   int64
	fInterval   time.Duration
	fFrames     int
	fHeartbeat  int64
	fOnLapse    string
	fMaxFails   int64
	fFailWindow int64
	fEject      int64
	fReason     string
)

func poolFlags(fs *flag.FlagSet) {
	fs.StringVar(&fStrategy, "strategy", "", "the strategy (waterfill, round-robin, …)")
	fs.Int64Var(&fSlowStart, "slow-start", -1, "slow-start window in seconds (0 turns it off)")
	fs.Int64Var(&fHeartbeat, "heartbeat-timeout-ms", -1, "a Scale without a heartbeat this long is lapsed (0 turns heartbeats off)")
	fs.StringVar(&fOnLapse, "on-lapse", "", "hold or reassign: what happens to a lapsed Scale's orders")
	fs.Int64Var(&fMaxFails, "max-fails", -1, "failure reports within the window that eject a Scale (0 turns ejection off)")
	fs.Int64Var(&fFailWindow, "fail-window-ms", -1, "the failure window in milliseconds")
	fs.Int64Var(&fEject, "eject-ms", -1, "how long an ejection lasts, times the consecutive ejections (at most 10)")
}

func heartbeatFlags(fs *flag.FlagSet) {
	fs.Int64Var(&fOrderCount, "order-count", -1, "the Scale's current load (sets baseLoad)")
}

func failFlags(fs *flag.FlagSet) {
	fs.StringVar(&fReason, "reason", "", "why, for the service's log")
}

func scaleFlags(fs *flag.FlagSet) {
	fs.Int64Var(&fWeight, "weight", -1, "weight, 1 … 1000000")
	fs.StringVar(&fState, "state", "", "active, draining or down")
	fs.Int64Var(&fMaxOrders, "max-orders", -1, "the most orders the Scale holds (0: unlimited)")
	fs.Int64Var(&fOrderCount, "order-count", -1, "the Scale's current load (sets baseLoad)")
}

func rmFlags(fs *flag.FlagSet) {
	fs.BoolVar(&fForce, "force", false, "cancel the Scale's outstanding orders and remove it")
}

func dispatchFlags(fs *flag.FlagSet) {
	fs.StringVar(&fKey, "key", "", "the Idempotency-Key (default: a new one for this command)")
	fs.BoolVar(&fDryRun, "dry-run", false, "compute the assignments without changing anything")
}

func completeFlags(fs *flag.FlagSet) {
	fs.Int64Var(&fDuration, "duration-ms", -1, "how long the order took (feeds weighted-response-time)")
}

func watchFlags(fs *flag.FlagSet) {
	fs.DurationVar(&fInterval, "interval", time.Second, "time between two frames: at least 250ms (at most 1m) on the watch stream, 100ms when polling an older service")
	fs.IntVar(&fFrames, "n", 0, "stop after this many frames (0: until interrupted)")
}

// optional returns a pointer to v, or nil for a flag left at -1.
func optional(v int64) *int64 {
	if v < 0 {
		return nil
	}
	return &v
}

func health(ctx context.Context, e *env, _ []string) error {
	live, err := e.c.Healthz(ctx)
	if err != nil {
		return err
	}
	ready, err := e.c.Readyz(ctx)
	if err != nil {
		return err
	}
	return e.emit(map[string]any{"healthz": live, "readyz": ready}, func(w io.Writer) {
		fmt.Fprintf(w, "healthz: %s\nreadyz: %s\n", live.Status, ready.Status)
	})
}

func listPools(ctx context.Context, e *env, _ []string) error {
	var pools []client.Pool
	for p, err := range e.c.ListPools(ctx, nil) {
		if err != nil {
			return err
		}
		pools = append(pools, p)
	}
	return e.emit(nonNil(pools), func(w io.Writer) {
		tw := newTable(w, "NAME\tSTRATEGY\tSCALES\tSLOW START\tCREATED")
		for _, p := range pools {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%ds\t%s\n", p.Name, p.Strategy, p.ScaleCount, p.SlowStartSeconds, p.CreatedAt.Format(time.RFC3339))
		}
		tw.Flush()
	})
}

func getPool(ctx context.Context, e *env, a []string) error {
	p, err := e.c.GetPool(ctx, a[0])
	if err != nil {
		return err
	}
	return e.emitPool(p)
}

func putPool(ctx context.Context, e *env, a []string) error {
	p, err := e.c.PutPool(ctx, a[0], client.PoolInput{
		Strategy: client.Strategy(fStrategy), SlowStartSeconds: optional(fSlowStart),
		HeartbeatTimeoutMs: optional(fHeartbeat), OnLapse: client.OnLapse(fOnLapse), MaxFails: optional(fMaxFails),
		FailWindowMs: optional(fFailWindow), EjectMs: optional(fEject),
	})
	if err != nil {
		return err
	}
	return e.emitPool(p)
}

func (e *env) emitPool(p *client.Pool) error {
	return e.emit(p, func(w io.Writer) {
		fmt.Fprintf(w, "pool %s: strategy %s, %d Scales, slow start %ds, created %s\n",
			p.Name, p.Strategy, p.ScaleCount, p.SlowStartSeconds, p.CreatedAt.Format(time.RFC3339))
		fmt.Fprintf(w, "health: heartbeat timeout %dms (on lapse: %s), max fails %d in %dms, eject %dms\n",
			p.HeartbeatTimeoutMs, p.OnLapse, p.MaxFails, p.FailWindowMs, p.EjectMs)
	})
}

func deletePool(ctx context.Context, e *env, a []string) error {
	if err := e.c.DeletePool(ctx, a[0]); err != nil {
		return err
	}
	return e.emit(map[string]string{"deleted": a[0]}, func(w io.Writer) { fmt.Fprintf(w, "pool %s deleted\n", a[0]) })
}

func listScales(ctx context.Context, e *env, a []string) error {
	var scales []client.Scale
	for s, err := range e.c.ListScales(ctx, a[0], nil) {
		if err != nil {
			return err
		}
		scales = append(scales, s)
	}
	return e.emit(nonNil(scales), func(w io.Writer) {
		tw := newTable(w, "COMPID\tSTATE\tHEALTH\tWEIGHT\tORDERCOUNT\tOUTSTANDING\tBASELOAD\tMAXORDERS")
		for _, s := range scales {
			printScaleRow(tw, &s)
		}
		tw.Flush()
	})
}

func printScaleRow(w io.Writer, s *client.Scale) {
	fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.CompID, s.State, s.Health, s.Weight, s.OrderCount, s.Outstanding, s.BaseLoad, maxOrders(s.MaxOrders))
}

func maxOrders(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

func (e *env) emitScale(s *client.Scale) error {
	return e.emit(s, func(w io.Writer) {
		tw := newTable(w, "COMPID\tSTATE\tHEALTH\tWEIGHT\tORDERCOUNT\tOUTSTANDING\tBASELOAD\tMAXORDERS")
		printScaleRow(tw, s)
		tw.Flush()
	})
}

func getScale(ctx context.Context, e *env, a []string) error {
	s, err := e.c.GetScale(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	return e.emitScale(s)
}

func putScale(ctx context.Context, e *env, a []string) error {
	s, err := e.c.PutScale(ctx, a[0], a[1], client.ScaleInput{
		Weight: optional(fWeight), State: client.ScaleState(fState),
		MaxOrders: optional(fMaxOrders), OrderCount: optional(fOrderCount),
	})
	if err != nil {
		return err
	}
	return e.emitScale(s)
}

func setState(st client.ScaleState) func(context.Context, *env, []string) error {
	return func(ctx context.Context, e *env, a []string) error {
		s, err := e.c.PutScale(ctx, a[0], a[1], client.ScaleInput{State: st})
		if err != nil {
			return err
		}
		return e.emitScale(s)
	}
}

func deleteScale(ctx context.Context, e *env, a []string) error {
	if err := e.c.DeleteScale(ctx, a[0], a[1], &client.DeleteScaleOptions{Force: fForce}); err != nil {
		return err
	}
	return e.emit(map[string]string{"deleted": a[1]}, func(w io.Writer) { fmt.Fprintf(w, "Scale %s deleted from %s\n", a[1], a[0]) })
}

func reassign(ctx context.Context, e *env, a []string) error {
	r, err := e.c.ReassignScale(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	return e.emit(r, func(w io.Writer) {
		fmt.Fprintf(w, "%d orders moved from %s\n", len(r.Reassigned), r.CompID)
		tw := newTable(w, "ORDER\tFROM\tTO")
		for _, m := range r.Reassigned {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", m.OrderID, m.From, m.To)
		}
		tw.Flush()
	})
}

func scaleOrders(ctx context.Context, e *env, a []string) error {
	var orders []client.Order
	for o, err := range e.c.ListScaleOrders(ctx, a[0], a[1], nil) {
		if err != nil {
			return err
		}
		orders = append(orders, o)
	}
	return e.emit(nonNil(orders), func(w io.Writer) { printOrders(w, orders) })
}

func printOrders(w io.Writer, orders []client.Order) {
	tw := newTable(w, "ORDER\tSCALE\tSTATE\tBATCH\tASSIGNED\tCOMPLETED\tMOVES")
	for _, o := range orders {
		done := "-"
		if o.CompletedAt != nil {
			done = o.CompletedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", o.OrderID, o.CompID, o.State, o.BatchID, o.AssignedAt.Format(time.RFC3339), done, o.Moves)
	}
	tw.Flush()
}

func (e *env) emitOrder(o *client.Order) error {
	return e.emit(o, func(w io.Writer) { printOrders(w, []client.Order{*o}) })
}

func getOrder(ctx context.Context, e *env, a []string) error {
	o, err := e.c.GetOrder(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	return e.emitOrder(o)
}

func completeOrder(ctx context.Context, e *env, a []string) error {
	var in *client.CompleteInput
	if fDuration >= 0 {
		in = &client.CompleteInput{DurationMs: &fDuration}
	}
	o, err := e.c.CompleteOrder(ctx, a[0], a[1], in)
	if err != nil {
		return err
	}
	return e.emitOrder(o)
}

func failOrder(ctx context.Context, e *env, a []string) error {
	o, err := e.c.FailOrder(ctx, a[0], a[1], client.FailInput{CompID: a[2], Reason: fReason})
	if err != nil {
		return err
	}
	return e.emitOrder(o)
}

func heartbeat(ctx context.Context, e *env, a []string) error {
	var in *client.HeartbeatInput
	if fOrderCount >= 0 {
		in = &client.HeartbeatInput{OrderCount: &fOrderCount}
	}
	s, err := e.c.HeartbeatScale(ctx, a[0], a[1], in)
	if err != nil {
		return err
	}
	return e.emitScale(s)
}

func cancelOrder(ctx context.Context, e *env, a []string) error {
	o, err := e.c.CancelOrder(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	return e.emitOrder(o)
}

func getBatch(ctx context.Context, e *env, a []string) error {
	b, err := e.c.GetBatch(ctx, a[0], a[1])
	if err != nil {
		return err
	}
	return e.emit(b, func(w io.Writer) { printAssignments(w, b.BatchID, b.Assignments) })
}

func printAssignments(w io.Writer, batchID string, as []client.Assignment) {
	if batchID != "" {
		fmt.Fprintf(w, "batch %s: %d orders\n", batchID, len(as))
	} else {
		fmt.Fprintf(w, "dry run: %d orders, nothing changed\n", len(as))
	}
	tw := newTable(w, "ORDER\tSCALE")
	for _, a := range as {
		fmt.Fprintf(tw, "%s\t%s\n", a.OrderID, a.CompID)
	}
	tw.Flush()
}

func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// nonNil makes an empty list print as [] in JSON, not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
