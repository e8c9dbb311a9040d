package redis_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestOwnSealAtOWN pins where a tail of a Scale's own index is sealed
// (own.lua, OWN = 256): before a token joins it once its value, header
// and entries, is OWN bytes or more; before an id joins it once its
// entries are. Each append of a call of one batch is sent a tail of
// exactly that size, and of a byte less: a batch of several named after
// its first order (ownAppendTok), one named by a batch id (ownAppend), a
// single order (ownAppendOne). At the size the tail's entries go to
// sealed chunk 0 and the batch's start chunk 1; a byte less the batch's
// first entry joins them. TestManyCallTailsAtTheEdge holds a call of
// several batches (ownPend) to what these give; together they pin every
// append. The walks of the other tests (TestManyLikeOne,
// TestManyCallSharesTails, checkOwnIndex's bound, which counts entries
// only) never reach a tail of exactly the size, so a comparison off by
// one (> for >=) passed the whole suite (rev28).
func TestOwnSealAtOWN(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	t0 := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	const hdr = len("0|0||") // a first chunk's tail header
	for _, tc := range []struct {
		name    string
		orders  []string // the batch's
		tok     bool     // named after its first order: a token
		entries int      // the tail's bytes of entries before the batch
		seal    bool
	}{
		{"ownAppendTok", []string{"n1", "n2"}, true, 256 - hdr, true},
		{"ownAppendTok", []string{"n1", "n2"}, true, 256 - hdr - 1, false},
		{"ownAppend", []string{"n1", "n2"}, false, 256, true},
		{"ownAppend", []string{"n1", "n2"}, false, 255, false},
		{"ownAppendOne", []string{"n1"}, false, 256, true},
		{"ownAppendOne", []string{"n1"}, false, 255, false},
	} {
		name := fmt.Sprintf("%s, %d bytes of entries", tc.name, tc.entries)
		if err := c.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		st := redis.New(c, redis.Options{Retention: time.Hour})
		healthPool(t, st, t0, dispatch.PoolSpec{}, "A")
		// Two single orders, each its own call (ownAppendOne), whose ids
		// with their commas make the tail's entries: x…x, then y…y.
		first := tc.entries/2 - 1
		olds := []string{strings.Repeat("x", first), strings.Repeat("y", tc.entries-first-2)}
		for i, id := range olds {
			req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost,
				BatchID: fmt.Sprintf("s%d", i), Orders: []dispatch.OrderInput{{ID: id}}}
			if _, _, err := st.Dispatch(ctx, req); err != nil {
				t.Fatalf("%s: single order: %v", name, err)
			}
		}
		old := strings.Join(olds, ",") + ","
		if tail := ownFields(t, c, "p")["A"]; tail != "0|0||"+old || len(tail) != hdr+tc.entries {
			t.Fatalf("%s: the tail before the batch: %q", name, tail)
		}
		req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost, UniqueIDs: true}
		for _, id := range tc.orders {
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
		}
		req.BatchID = "b-" + tc.orders[0]
		if tc.tok {
			req.BatchID = st.BatchID(req)
		}
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// chunk 0's entries: sealed, or still the tail's (the batch's
		// second id may seal the tail after its first joined)
		own := ownFields(t, c, "p")
		list0, sealed := own["A 0"]
		if sealed {
			list0 = strings.TrimPrefix(list0, "||")
		} else {
			list0 = strings.TrimPrefix(own["A"], "0|0||")
		}
		switch {
		case tc.seal && (!sealed || list0 != old || !strings.HasPrefix(own["A"], "1|0||")):
			t.Errorf("%s: the tail is not sealed before the batch's entries: chunk 0 %q, tail %q", name, own["A 0"], own["A"])
		case !tc.seal && (!strings.HasPrefix(list0, old) || len(list0) == len(old)):
			t.Errorf("%s: the tail is sealed before the batch's first entry: chunk 0 %q, tail %q", name, own["A 0"], own["A"])
		}
		checkOwnIndex(t, c, st, "p")
		want := strings.Join(append(slices.Clone(olds), tc.orders...), " ")
		if got, _ := listScale(t, st, "A", 3, t0); strings.Join(got, " ") != want {
			t.Errorf("%s: A lists %v, want %s", name, got, want)
		}
	}
}
