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

// chunkAfterID makes Scale A's index, A being pool p's one Scale: 19
// tokens of batches of 40 named after their first order, then the id of a
// single order x, then one more token, all in one chunk since own24 (a
// chunk stood for fewer than 256 orders of tokens and a batch before). It
// returns the store, its client, the cursor after the first page, which
// ends at x, and the last batch's ids.
func chunkAfterID(t *testing.T) (*redis.Store, goredis.UniversalClient, string, []string) {
	ctx := context.Background()
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	healthPool(t, st, t0, dispatch.PoolSpec{}, "A")
	batchOf := func(b int) []string {
		var ids []string
		for i := range chunkBatch {
			ids = append(ids, fmt.Sprintf("b%02d-%02d", b, i))
		}
		return ids
	}
	for b := range chunkBefore {
		namedBatch(t, st, t0, batchOf(b)...)
	}
	namedBatch(t, st, t0, "x")
	last := batchOf(chunkBefore)
	namedBatch(t, st, t0, last...)
	t.Logf("own index: %q", ownFields(t, c, "p"))
	checkOwnIndex(t, c, st, "p")
	first, next, err := st.ListScaleOrders(ctx, "p", "A", dispatch.Page{Limit: chunkBefore*chunkBatch + 1})
	if err != nil || len(first) != chunkBefore*chunkBatch+1 || first[len(first)-1].ID != "x" || next == "" {
		t.Fatalf("first page: %d orders, next %q, %v; want %d ending at x", len(first), next, err, chunkBefore*chunkBatch+1)
	}
	return st, c, next, last
}

const (
	chunkBatch, chunkBefore = 40, 19
	// what a page may read or list again of the chunk before its cursor:
	// OWN orders of tokens and a batch's (scale_orders.lua)
	chunkBound = 256 + chunkBatch
)

// TestOwnChunkPageAfterID: a page of one whose cursor is x, an id still in
// its chunk, goes on after x's entry, and reads none of the tokens before
// it (it read all 19: each token read costs an HGET of its batch's
// assignments and an HMGET of its orders' records).
func TestOwnChunkPageAfterID(t *testing.T) {
	st, c, next, last := chunkAfterID(t)
	resetStats(t, c)
	page, _, err := st.ListScaleOrders(context.Background(), "p", "A", dispatch.Page{Limit: 1, Cursor: next})
	if err != nil || len(page) != 1 || page[0].ID != last[0] {
		t.Fatalf("page after x: %v, %v; want %s", page, err, last[0])
	}
	reads := commandCalls(t, c, "hget") + commandCalls(t, c, "hmget") + commandCalls(t, c, "hexists")
	t.Logf("a page of one after x: %d reads", reads)
	if maxReads := int64(2*(chunkBound/chunkBatch+1) + 6); reads > maxReads {
		t.Errorf("a page of one after x read %d entries, want at most %d (the tokens of OWN orders and a batch)", reads, maxReads)
	}
}
