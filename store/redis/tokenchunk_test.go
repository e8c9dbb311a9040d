package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// chunkAfterID makes Scale A's index, A being pool p's one Scale: before
// tokens of batches of size orders named after their first order, then
// the id of a single order x, then one more token. It returns the store,
// its client, the cursor after the first page, which ends at x, and the
// last batch's ids.
func chunkAfterID(t *testing.T, size, before int) (*redis.Store, goredis.UniversalClient, string, []string) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, "A")
	batchOf := func(b int) []string {
		var ids []string
		for i := range size {
			ids = append(ids, fmt.Sprintf("b%02d-%02d", b, i))
		}
		return ids
	}
	for b := range before {
		namedBatch(t, st, t0, batchOf(b)...)
	}
	namedBatch(t, st, t0, "x")
	last := batchOf(before)
	namedBatch(t, st, t0, last...)
	t.Logf("own index: %q", ownFields(t, c, "p"))
	checkOwnIndex(t, c, st, "p")
	first, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: before*size + 1})
	if err != nil || len(first) != before*size+1 || first[len(first)-1].ID != "x" || next == "" {
		t.Fatalf("first page: %d orders, next %q, %v; want %d ending at x", len(first), next, err, before*size+1)
	}
	return st, c, next, last
}

// chunkCases are the batches before x: tokens of 15 orders (below OWNK,
// 16: many share a chunk) and of 40 (each seals its tail as it joins).
var chunkCases = []struct{ size, before int }{{15, 60}, {40, 19}}

// TestOwnChunkPageAfterID: a page of one whose cursor is x, an id still in
// its chunk, goes on after x's entry, and reads none of the tokens before
// it (each token read costs an HGET of its batch's assignments and an
// HMGET of its orders' records; it read all of them before 0661b73).
func TestOwnChunkPageAfterID(t *testing.T) {
	for _, cc := range chunkCases {
		t.Run(fmt.Sprint(cc.size), func(t *testing.T) {
			st, c, next, last := chunkAfterID(t, cc.size, cc.before)
			resetStats(t, c)
			page, _, err := st.ListScaleOrders(context.Background(), "p", "A", dispatch.Page{Limit: 1, Cursor: next})
			if err != nil || len(page) != 1 || page[0].ID != last[0] {
				t.Fatalf("page after x: %v, %v; want %s", page, err, last[0])
			}
			reads := commandCalls(t, c, "hget") + commandCalls(t, c, "hmget") + commandCalls(t, c, "hexists")
			t.Logf("a page of one after x: %d reads", reads)
			if reads > 8 {
				t.Errorf("a page of one after x read %d entries, want at most 8 (none of the tokens before x)", reads)
			}
		})
	}
}

// TestOwnChunkPageAfterIDLeft: x completes between the pages; the page
// after it goes on at the entry after x's, the cursor's anchor, and lists
// none of the first page's orders again. (Before the anchors it started
// again at x's chunk's start: 225 orders again with tokens of 15, under
// 51 of them sharing a chunk; none with tokens of 40, each sealing its
// own.)
func TestOwnChunkPageAfterIDLeft(t *testing.T) {
	for _, cc := range chunkCases {
		t.Run(fmt.Sprint(cc.size), func(t *testing.T) {
			ctx := context.Background()
			st, _, next, last := chunkAfterID(t, cc.size, cc.before)
			t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
			if _, _, err := st.Complete(ctx, "p", []dispatch.Completion{{OrderID: "x"}}, t0); err != nil {
				t.Fatal(err)
			}
			page, _, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: dispatch.MaxLimit, Cursor: next})
			if err != nil {
				t.Fatal(err)
			}
			again := 0
			for _, o := range page {
				if o.ID[:3] != last[0][:3] {
					again++
				}
			}
			t.Logf("the page after x completed lists %d orders, %d of them again", len(page), again)
			if again > 0 {
				t.Errorf("the page after x completed lists %d orders of the first page again, want none", again)
			}
		})
	}
}
