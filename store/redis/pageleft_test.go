package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// pageLeft is how a test of TestPageAfterCursorLeft changes Scale A
// between two pages, given the page just listed and each order's batch.
type pageLeft struct {
	name string
	// leave returns the orders that complete before the next page.
	leave func(page []string, batchOf map[string][]string) []string
	// bounce: the order after the page's last one fails over to Scale B
	// and back to A, where it joins A's tail as an id of its own.
	bounce bool
}

var pageLefts = []pageLeft{
	// the page's last order alone: its chunk stays
	{"last", func(page []string, _ map[string][]string) []string { return page[len(page)-1:] }, false},
	// every order of the page, as a client that drains the Scale would:
	// chunks empty, and the entry before the last order's is gone too
	{"drain", func(page []string, _ map[string][]string) []string { return page }, false},
	// the last order's whole batch, listed or not: a token goes whole; of
	// a batch named by a UUID the ids before and after the last order's
	// go with it (the far anchor is the nearest entry of another batch)
	{"batch", func(page []string, batchOf map[string][]string) []string { return batchOf[page[len(page)-1]] }, false},
	// the last order, and the one after it leaves its place: an anchor
	// that names an id must no longer hold when its order moved (going
	// on at its new place, the tail's end, would skip the orders between)
	{"bounce", func(page []string, _ map[string][]string) []string { return page[len(page)-1:] }, true},
}

// TestPageAfterCursorLeft pages through Scale A, the pool's only Scale,
// 26 orders a page, over 100 batches of 15 orders (below OWNK: a chunk
// holds some 40 of their tokens), named by a UUID (A's index an id per
// order, some 36 a chunk) or after their first order (a token per batch),
// and between pages some orders leave (pageLefts), the page's last order
// among them. Every order that stays must be listed, once: the cursor's
// anchors, the entries before and after its order's, take the next page
// past the orders listed. Before them the next page started again at the
// start of the chunk of the order that had left, and listed again up to a
// chunk's orders each time. A cursor of the builds before them
// ("chunk+moves.orderId", the anchors cut off) must still page through
// every order, as it did.
func TestPageAfterCursorLeft(t *testing.T) {
	for _, batches := range []int{100, 2} {
		for _, named := range []bool{false, true} {
			for _, pl := range pageLefts {
				for _, old := range []bool{false, true} {
					t.Run(fmt.Sprintf("batches=%d/named=%v/%s/old=%v", batches, named, pl.name, old), func(t *testing.T) {
						again, most, left := pageAfterLeft(t, batches, named, pl, old)
						t.Logf("%d orders listed again, at most %d by a page; %d left", again, most, left)
						if !old && again > 0 {
							t.Errorf("the pages listed %d orders again, want none", again)
						}
					})
				}
			}
		}
	}
}

// pageAfterLeft runs one case of TestPageAfterCursorLeft: it returns how
// many orders the pages listed again, the most by one page, and how many
// left, and fails the test if an order that stayed was not listed.
func pageAfterLeft(t *testing.T, batches int, named bool, pl pageLeft, old bool) (again, most, left int) {
	ctx := context.Background()
	c, st, _ := poolOfA(t)
	t0 := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	batchOf := map[string][]string{}
	var all []string
	for b := range batches {
		req := dispatch.DispatchRequest{Pool: "p", Now: t0, MaxCost: dispatch.DefaultMaxCost}
		var ids []string
		for i := range 15 {
			id := fmt.Sprintf("b%02d-%02d", b, i)
			ids = append(ids, id)
			req.Orders = append(req.Orders, dispatch.OrderInput{ID: id})
			req.Rand = append(req.Rand, uint64(i), uint64(i+1))
		}
		req.BatchID = fmt.Sprintf("0190a6e4-7a1b-7c3d-8e4f-%012x", b)
		if named {
			req.BatchID = st.BatchID(req)
		}
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			batchOf[id] = ids
		}
		all = append(all, ids...)
	}
	// (B comes after the batches: A holds them all)
	if _, _, err := st.PutScale(ctx, "p", "B", dispatch.ScaleSpec{}, t0); err != nil {
		t.Fatal(err)
	}
	if own := ownFields(t, c, "p"); batches > 2 && len(own) < 3 {
		t.Fatalf("A's index should be some sealed chunks and a tail: %v", own)
	}
	listed, gone := map[string]bool{}, map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("no last page")
		}
		os, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 26, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		var page []string
		n := 0
		for _, o := range os {
			if gone[o.ID] {
				t.Fatalf("page %d lists %s, which has left", pages, o.ID)
			}
			if listed[o.ID] {
				n++
			}
			listed[o.ID] = true
			page = append(page, o.ID)
		}
		again, most = again+n, max(most, n)
		if next == "" {
			break
		}
		if old {
			next, _, _ = strings.Cut(next, "~")
		}
		cursor = next
		var done []dispatch.Completion
		for _, id := range pl.leave(page, batchOf) {
			if !gone[id] {
				gone[id] = true
				done = append(done, dispatch.Completion{OrderID: id})
			}
		}
		if _, _, err := st.Complete(ctx, "p", done, t0); err != nil {
			t.Fatal(err)
		}
		if pl.bounce {
			bounceNext(t, st, all, gone, listed, t0)
		}
	}
	for _, id := range all {
		if !listed[id] && !gone[id] {
			t.Errorf("%s stayed and was never listed", id)
		}
	}
	checkOwnIndex(t, c, st, "p")
	return again, most, len(gone)
}

// bounceNext moves the first order of all (in order of dispatch) that is
// neither listed nor gone, if any, to Scale B and back to A.
func bounceNext(t *testing.T, st dispatch.Store, all []string, gone, listed map[string]bool, t0 time.Time) {
	t.Helper()
	for _, id := range all {
		if gone[id] || listed[id] {
			continue
		}
		for _, from := range []string{"A", "B"} {
			r, err := st.Fail(context.Background(), dispatch.FailRequest{Pool: "p", OrderID: id, CompID: from, Now: t0,
				Rand: []uint64{1, 2}, MaxCost: dispatch.DefaultMaxCost})
			if err != nil || !r.Moved {
				t.Fatalf("fail %s on %s: %+v, %v", id, from, r, err)
			}
		}
		return
	}
}

// TestPageAfterCursorLeftChunkEnd: the first page ends at the last order of
// A's first (sealed) chunk, single orders each an id of its own (no batch
// to look past), and that order and the one before it complete: the next
// page goes on at the next chunk (the cursor's anchor "-", x's entry ended
// a sealed chunk, which takes no more), not at the first chunk's start.
func TestPageAfterCursorLeftChunkEnd(t *testing.T) {
	ctx := context.Background()
	c, st, _ := poolOfA(t)
	t0 := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for i := range 60 {
		namedBatch(t, st, t0, fmt.Sprintf("o-%03d", i))
	}
	first := strings.Count(ownFields(t, c, "p")["A 0"], ",")
	if first < 10 || first > 50 {
		t.Fatalf("A's first chunk holds %d orders: %v", first, ownFields(t, c, "p"))
	}
	page, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: first})
	if err != nil || len(page) != first || next == "" {
		t.Fatalf("first page: %d orders, next %q, %v", len(page), next, err)
	}
	done := []dispatch.Completion{{OrderID: page[first-1].ID}, {OrderID: page[first-2].ID}}
	if _, _, err := st.Complete(ctx, "p", done, t0); err != nil {
		t.Fatal(err)
	}
	rest, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 100, Cursor: next})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 60-first || rest[0].ID != fmt.Sprintf("o-%03d", first) {
		t.Errorf("the page after %s: %d orders %v, want %d from o-%03d", page[first-1].ID, len(rest), orderIDsOf(rest), 60-first, first)
	}
}

func orderIDsOf(os []dispatch.Order) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return out
}

// TestPageCursorAnchors: a cursor's anchors that the store would not make
// are ErrInvalidRequest; well-formed ones that name no entry of the chunk
// (a client may keep a cursor long) page as a cursor without anchors.
func TestPageCursorAnchors(t *testing.T) {
	ctx := context.Background()
	_, st, _ := poolOfA(t)
	t0 := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("o-%d", i))
	}
	namedBatch(t, st, t0, ids...)
	page, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 3})
	if err != nil || len(page) != 3 || strings.Count(next, "~") != 4 {
		t.Fatalf("first page: %v, next %q, %v; want 3 orders and a cursor with four anchors", orderIDsOf(page), next, err)
	}
	base, _, _ := strings.Cut(next, "~")
	for _, bad := range []string{"~", "~~", "~~~", "~~~~~", "~x~~~", "~t~~~", "~tzz~~~", "~i.o-1~~~", "~i1~~~", "~i1.~~~", "~~-~i1.o~1~"} {
		if _, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 3, Cursor: base + bad}); !errors.Is(err, dispatch.ErrInvalidRequest) {
			t.Errorf("cursor %q: %v, want ErrInvalidRequest", base+bad, err)
		}
	}
	if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: page[2].ID}}, t0); err != nil {
		t.Fatal(err)
	}
	for _, odd := range []string{"~~~~", "~-~-~-~", "~t77~t78~i0.o-9~t79", "~i3.o-1~i0.nope~~"} {
		rest, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: 100, Cursor: base + odd})
		if err != nil || len(rest) < 7 {
			t.Errorf("cursor %q: %v, %v; want the 7 orders after %s, at least", base+odd, orderIDsOf(rest), err, page[2].ID)
		}
	}
}
