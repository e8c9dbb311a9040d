package redis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// The records' encodings are described in doc.go; lua/lib.lua writes them.

var stateOfCode = map[string]dispatch.ScaleState{"a": dispatch.Active, "d": dispatch.Draining, "x": dispatch.Down}

var codeOfState = map[dispatch.ScaleState]string{dispatch.Active: "a", dispatch.Draining: "d", dispatch.Down: "x"}

var orderStateOfCode = map[string]dispatch.OrderState{"a": dispatch.Assigned, "c": dispatch.Completed, "x": dispatch.Cancelled}

// ints parses decimal fields; the first error is kept in err.
type ints struct{ err error }

func (p *ints) parse(s string) int64 {
	if s == "" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil && p.err == nil {
		p.err = err
	}
	return v
}

// time parses a time in milliseconds; empty is the zero time.
func (p *ints) time(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	return fromMs(p.parse(s))
}

var healthOfCode = map[string]dispatch.Health{"u": dispatch.Up, "l": dispatch.Lapsed, "e": dispatch.Ejected}

// decodeScale reads a Scale as the scripts show it (lib.lua's scaleView):
// "weight|state|maxOrders|outstanding|baseLoad|activeSinceMs|avgMs|health|
// lastHeartbeatMs|ejectedUntilMs|ejections|failures|failWindowStartMs|
// lastFailMs", its health as recorded.
func decodeScale(compID, rec string) (dispatch.Scale, error) {
	f := strings.Split(rec, "|")
	if len(f) != 14 {
		return dispatch.Scale{}, fmt.Errorf("redis: scale %q: bad record %q", compID, rec)
	}
	var p ints
	sc := dispatch.Scale{
		CompID:          compID,
		Weight:          p.parse(f[0]),
		State:           stateOfCode[f[1]],
		MaxOrders:       p.parse(f[2]),
		Outstanding:     p.parse(f[3]),
		BaseLoad:        p.parse(f[4]),
		ActiveSince:     p.time(f[5]),
		Health:          healthOfCode[f[7]],
		LastHeartbeatAt: p.time(f[8]),
		EjectedUntil:    p.time(f[9]),
		Ejections:       p.parse(f[10]),
		Failures:        p.parse(f[11]),
		FailWindowStart: p.time(f[12]),
		LastFailAt:      p.time(f[13]),
	}
	if p.err != nil || sc.State == "" || sc.Health == "" {
		return dispatch.Scale{}, fmt.Errorf("redis: scale %q: bad record %q", compID, rec)
	}
	return sc, nil
}

// decodeOrder reads an order as the scripts show it (records.lua's orderView):
// "state|assignedMs|doneMs|batchId|compId|moves|key".
func decodeOrder(orderID, view string) (dispatch.Order, error) {
	f := strings.SplitN(view, "|", 7)
	if len(f) != 7 {
		return dispatch.Order{}, fmt.Errorf("redis: order %q: bad record %q", orderID, view)
	}
	var p ints
	o := dispatch.Order{
		ID:          orderID,
		State:       orderStateOfCode[f[0]],
		AssignedAt:  p.time(f[1]),
		CompletedAt: p.time(f[2]),
		BatchID:     unpackBatchID(f[3]),
		CompID:      f[4],
		Moves:       p.parse(f[5]),
		Key:         f[6],
	}
	if p.err != nil || o.State == "" {
		return dispatch.Order{}, fmt.Errorf("redis: order %q: bad record %q", orderID, view)
	}
	return o, nil
}

// decodeBatch reads a batch record as the scripts show it,
// "createdAt|expiresAt|strategy|orderId,compId,…"
// (doc.go), in one pass: the assignments' ids are substrings of rec.
func decodeBatch(pool, batchID, rec string) (dispatch.Batch, error) {
	head, pairs := splitRecord(rec)
	return decodeBatchOf(pool, batchID, head, pairs, nil)
}

// splitRecord is a batch record's head, "createdAt|expiresAt|strategy",
// and its pairs after the '|' that ends it; "" and rec when it has no
// third '|'.
func splitRecord(rec string) (head, pairs string) {
	i := 0
	for range 3 {
		j := strings.IndexByte(rec[i:], '|')
		if j < 0 {
			return "", rec
		}
		i += j + 1
	}
	return rec[:i-1], rec[i:]
}

// decodeBatchOf is decodeBatch of a record in two parts (splitRecord), for
// a batch that likely holds orders, in their order: the reply of a
// dispatch of them. Their ids are not searched for in pairs but compared,
// and the assignments take them; pairs of other orders are read as
// decodeBatch reads them.
func decodeBatchOf(pool, batchID, head, pairs string, orders []dispatch.OrderInput) (dispatch.Batch, error) {
	bad := func() (dispatch.Batch, error) {
		return dispatch.Batch{}, fmt.Errorf("redis: batch %q: bad record", batchID)
	}
	b, ok := batchHead(pool, batchID, head)
	if !ok {
		return bad()
	}
	// A batch named after its first order keeps its Scales and then its
	// ids, "compId,…,|orderId,…" (layout 9, lua/records.lua).
	if comps, ids, ok := strings.Cut(pairs, ",|"); ok {
		n := strings.Count(comps, ",") + 1
		if strings.Count(ids, ",")+1 != n || strings.IndexByte(ids, '|') >= 0 {
			return bad()
		}
		b.Assignments = make([]dispatch.Assignment, n)
		for i := range b.Assignments {
			a := &b.Assignments[i]
			a.OrderID, ids, _ = strings.Cut(ids, ",")
			a.CompID, comps, _ = strings.Cut(comps, ",")
		}
		return b, nil
	}
	if as, ok := assignmentsOf(pairs, orders); ok {
		b.Assignments = as
		return b, nil
	}
	n := strings.Count(pairs, ",") + 1
	if n%2 != 0 {
		return bad()
	}
	b.Assignments = make([]dispatch.Assignment, n/2)
	for i := range b.Assignments {
		a := &b.Assignments[i]
		a.OrderID, pairs, _ = strings.Cut(pairs, ",")
		a.CompID, pairs, _ = strings.Cut(pairs, ",")
	}
	return b, nil
}

// batchHead is the batch of a record's head, "createdAt|expiresAt|strategy"
// (splitRecord), without its assignments, and whether head is one.
func batchHead(pool, batchID, head string) (dispatch.Batch, bool) {
	created, rest, ok1 := strings.Cut(head, "|")
	_, strategy, ok2 := strings.Cut(rest, "|")
	if !ok1 || !ok2 || strings.IndexByte(strategy, '|') >= 0 {
		return dispatch.Batch{}, false
	}
	var p ints
	b := dispatch.Batch{ID: batchID, Pool: pool, Strategy: dispatch.Strategy(strategy), CreatedAt: p.time(created)}
	return b, p.err == nil
}

// assignmentsTo pairs orders, in their order, with comps, their Scales
// "compId,…" as a dispatch of a batch of several answers them (layout 9).
func assignmentsTo(batchID, comps string, orders []dispatch.OrderInput) ([]dispatch.Assignment, error) {
	if len(orders) == 0 || strings.Count(comps, ",") != len(orders)-1 {
		return nil, fmt.Errorf("redis: batch %q: %d orders, Scales %q", batchID, len(orders), comps)
	}
	as := make([]dispatch.Assignment, len(orders))
	for i := range orders {
		c, rest, _ := strings.Cut(comps, ",")
		as[i] = dispatch.Assignment{OrderID: orders[i].ID, CompID: c}
		comps = rest
	}
	return as, nil
}

// assignmentsOf reads the pairs "orderId,compId,…" of ids when they name
// orders, all and in their order, and reports whether they do.
func assignmentsOf(ids string, orders []dispatch.OrderInput) ([]dispatch.Assignment, bool) {
	// (2n - 1 commas: then no id holds one, as decodeBatch reads it)
	if len(orders) == 0 || strings.Count(ids, ",") != 2*len(orders)-1 {
		return nil, false
	}
	as := make([]dispatch.Assignment, len(orders))
	for i := range orders {
		id := orders[i].ID
		if len(ids) <= len(id) || ids[len(id)] != ',' || ids[:len(id)] != id {
			return nil, false
		}
		s := ids[len(id)+1:]
		j := strings.IndexByte(s, ',')
		if last := i == len(orders)-1; last != (j < 0) {
			// (a comma after the last pair, or none before the next)
			return nil, false
		} else if last {
			as[i] = dispatch.Assignment{OrderID: id, CompID: s}
		} else {
			as[i] = dispatch.Assignment{OrderID: id, CompID: s[:j]}
			ids = s[j+1:]
		}
	}
	return as, true
}
