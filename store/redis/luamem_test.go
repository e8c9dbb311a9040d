package redis_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	goredis "github.com/redis/go-redis/v9"
)

// TestLuaHeapKeepsNoBatch: the library's Lua state keeps nothing of a
// batch once the batch is done. Twenty batches of about 2,000 orders with
// 100-byte ids, named after their first orders (layout 9: their ids come
// joined, some 200 KB a batch), each one order smaller than the one
// before, then many small batches (the Lua collector runs as calls
// allocate, and Redis steps it every 50 calls): the functions' Lua memory
// (INFO memory, used_memory_vm_functions) may not have grown by anything
// near the 4 MB of ids the batches sent. A table the library keeps from
// call to call (a plan's comps, tab26) that holds on to a batch's joined
// ids past the orders it lists kept every one of them (rev26 T1).
func TestLuaHeapKeepsNoBatch(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{Retention: time.Hour})
	svc := dispatch.NewService(st, dispatch.Config{})
	ctx := context.Background()
	putWaterfillPool(t, svc, "p", scaleNames(16))
	dispatchNamed := func(ids []string) {
		t.Helper()
		req := dispatch.DispatchRequest{Pool: "p", Now: time.Now(), UniqueIDs: true, MaxCost: dispatch.DefaultMaxCost,
			Orders: make([]dispatch.OrderInput, len(ids))}
		for i, id := range ids {
			req.Orders[i].ID = id
		}
		if req.BatchID = st.BatchID(req); req.BatchID == "" {
			t.Fatal("the batch is not named after its first order")
		}
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	small := func(tag string, k int) {
		for i := range k {
			dispatchNamed([]string{fmt.Sprintf("%s-%d-a", tag, i), fmt.Sprintf("%s-%d-b", tag, i)})
		}
	}

	small("warm", 500)
	before := luaMemory(t, c)
	sent := 0
	for b := range 20 {
		ids := make([]string, 2000-b)
		for o := range ids {
			ids[o] = fmt.Sprintf("%s-%03d-%05d", strings.Repeat("x", 90), b, o)
			sent += len(ids[o]) + 1
		}
		dispatchNamed(ids)
	}
	small("after", 2000)
	if grew := luaMemory(t, c) - before; grew > int64(sent)/4 {
		t.Errorf("the functions' Lua memory grew by %d bytes after batches that sent %d bytes of ids, want under %d", grew, sent, sent/4)
	}
}

// luaMemory is INFO memory's used_memory_vm_functions: the functions' Lua
// state.
func luaMemory(t *testing.T, c goredis.UniversalClient) int64 {
	t.Helper()
	s, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory_vm_functions:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO memory without used_memory_vm_functions:\n%s", s)
	return 0
}
