package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/dispatcher/dispatcher/client"
)

func dispatchBatch(ctx context.Context, e *env, a []string) error {
	var in client.BatchInput
	if len(a) > 1 {
		for _, id := range a[1:] {
			in.Orders = append(in.Orders, client.OrderInput{ID: id})
		}
	} else {
		orders, err := readOrders(e.stdin)
		if err != nil {
			return err
		}
		in.Orders = orders
	}
	if len(in.Orders) == 0 {
		return usagef("dispatch: no orders: give ids as arguments or JSON lines on stdin")
	}
	if fDryRun {
		if fKey != "" {
			return usagef("dispatch: -dry-run records nothing, so it takes no -key")
		}
		p, err := e.c.DispatchDryRun(ctx, a[0], in)
		if err != nil {
			return err
		}
		return e.emit(p, func(w io.Writer) { printAssignments(w, "", p.Assignments) })
	}
	b, err := e.c.Dispatch(ctx, a[0], in, &client.DispatchOptions{IdempotencyKey: fKey})
	if err != nil {
		return err
	}
	return e.emit(b, func(w io.Writer) { printAssignments(w, b.BatchID, b.Assignments) })
}

// readOrders reads one order a line, each a JSON object such as
// {"id": "o-1", "key": "cust-9"} ({} for an order whose id the service
// makes); blank lines are skipped.
func readOrders(r io.Reader) ([]client.OrderInput, error) {
	var orders []client.OrderInput
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var o client.OrderInput
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			return nil, usagef("stdin line %d: %v (want a JSON object such as {\"id\":\"o-1\",\"key\":\"cust-9\"})", n, err)
		}
		if dec.More() {
			return nil, usagef("stdin line %d: more than one JSON value", n)
		}
		orders = append(orders, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	return orders, nil
}

func showTable(ctx context.Context, e *env, a []string) error {
	t, err := e.c.GetTable(ctx, a[0])
	if err != nil {
		return err
	}
	return e.emit(t, func(w io.Writer) {
		tw := newTable(w, "LEVEL\tCOMPID\tDISPATCHCOUNT")
		for i, id := range t.CompIDArr {
			fmt.Fprintf(tw, "%d\t%s\t%d\n", i, id, t.DispatchCountArr[i])
		}
		tw.Flush()
	})
}
