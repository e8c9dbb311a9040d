package storetest

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// PoolSnapshot is what a client can read of a pool as a whole: the pool,
// all its Scales in list order, and its table. Compare two with
// CheckUnchanged, or their String forms.
type PoolSnapshot struct {
	Pool   dispatch.Pool
	Scales []dispatch.Scale
	Table  dispatch.Table
}

// Snapshot reads the whole pool from s, failing t if it cannot.
func Snapshot(t testing.TB, s dispatch.Store, pool string) PoolSnapshot {
	t.Helper()
	p, err := s.GetPool(context.Background(), pool)
	if err != nil {
		t.Fatalf("GetPool %s: %v", pool, err)
	}
	tab, err := s.Table(context.Background(), pool)
	if err != nil {
		t.Fatalf("Table %s: %v", pool, err)
	}
	return PoolSnapshot{Pool: p, Scales: allScales(t, s, pool), Table: tab}
}

// String renders the snapshot one item a line, times in UTC, so that equal
// states give equal strings whatever time zone or representation a store
// returns.
func (ps PoolSnapshot) String() string {
	var b strings.Builder
	b.WriteString(formatPool(ps.Pool) + " " + formatOptions(ps.Pool.Health))
	for _, sc := range ps.Scales {
		b.WriteString("\n  " + formatScale(sc) + " " + formatHealth(sc))
	}
	b.WriteString("\n  table " + formatTable(ps.Table))
	return b.String()
}

// CheckUnchanged fails t unless the pool in s is as want shows it.
func CheckUnchanged(t testing.TB, s dispatch.Store, want PoolSnapshot) {
	t.Helper()
	if got := Snapshot(t, s, want.Pool.Name); got.String() != want.String() {
		t.Errorf("pool %s changed:\ngot  %s\nwant %s", want.Pool.Name, got, want)
	}
}

func formatPool(p dispatch.Pool) string {
	return fmt.Sprintf("pool %s strategy=%s slowStart=%s scales=%d created=%s",
		p.Name, p.Strategy, p.SlowStart, p.ScaleCount, formatTime(p.CreatedAt))
}

// formatOptions renders a pool's health options.
func formatOptions(h dispatch.HealthOptions) string {
	return fmt.Sprintf("heartbeat=%s onLapse=%s maxFails=%d failWindow=%s eject=%s leasesSince=%s",
		h.HeartbeatTimeout, h.OnLapse, h.MaxFails, h.FailWindow, h.EjectTime, formatTime(h.LeasesSince))
}

func formatScale(sc dispatch.Scale) string {
	return fmt.Sprintf("%s weight=%d state=%s max=%d count=%d outstanding=%d base=%d activeSince=%s",
		sc.CompID, sc.Weight, sc.State, sc.MaxOrders, sc.OrderCount(), sc.Outstanding, sc.BaseLoad, formatTime(sc.ActiveSince))
}

// formatHealth renders a Scale's health fields as the store recorded them.
func formatHealth(sc dispatch.Scale) string {
	return fmt.Sprintf("health=%s heartbeat=%s ejectedUntil=%s failures=%d window=%s lastFail=%s ejections=%d",
		sc.Health, formatTime(sc.LastHeartbeatAt), formatTime(sc.EjectedUntil), sc.Failures,
		formatTime(sc.FailWindowStart), formatTime(sc.LastFailAt), sc.Ejections)
}

func formatScales(scs []dispatch.Scale) string {
	parts := make([]string, len(scs))
	for i, sc := range scs {
		parts[i] = fmt.Sprintf("%s=%d", sc.CompID, sc.OrderCount())
	}
	return strings.Join(parts, " ")
}

func formatTable(tab dispatch.Table) string {
	return fmt.Sprintf("%v %v", tab.CompIDs, tab.DispatchCounts)
}

func formatOrder(o dispatch.Order) string {
	return fmt.Sprintf("%s comp=%s batch=%s key=%q state=%s assigned=%s completed=%s moves=%d",
		o.ID, o.CompID, o.BatchID, o.Key, o.State, formatTime(o.AssignedAt), formatTime(o.CompletedAt), o.Moves)
}

func formatBatch(b dispatch.Batch) string {
	as := make([]string, len(b.Assignments))
	for i, a := range b.Assignments {
		as[i] = a.OrderID + ":" + a.CompID
	}
	return fmt.Sprintf("batch %q pool=%s strategy=%s created=%s [%s]",
		b.ID, b.Pool, b.Strategy, formatTime(b.CreatedAt), strings.Join(as, " "))
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func compareScales(a, b dispatch.Scale) int {
	if c := cmp.Compare(a.OrderCount(), b.OrderCount()); c != 0 {
		return c
	}
	return strings.Compare(a.CompID, b.CompID)
}
