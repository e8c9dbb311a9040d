package redis_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestFunctionLibraryReloads: a dispatch loads the dispatch library into a
// Redis that lacks it, at first and again after FUNCTION FLUSH (a server
// emptied behind the store's back), and the library carries a version in
// its name, so that two versions of the dispatcher can share a Redis.
func TestFunctionLibraryReloads(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := context.Background()
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	mustPool(t, svc, "p", "A", "B")
	libs := func() []string {
		t.Helper()
		list, err := c.FunctionList(ctx, goredis.FunctionListQuery{}).Result()
		if err != nil {
			t.Fatalf("FUNCTION LIST: %v", err)
		}
		var names []string
		for _, l := range list {
			names = append(names, l.Name)
		}
		return names
	}
	for round := range 2 {
		if got := libs(); len(got) != 0 {
			t.Fatalf("round %d: libraries before a dispatch: %v, want none", round, got)
		}
		in := dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: fmt.Sprintf("o%d", round)}}}
		if b, _, err := svc.Dispatch(ctx, in); err != nil || len(b.Assignments) != 1 {
			t.Fatalf("round %d: Dispatch: %v, %v", round, b, err)
		}
		got := libs()
		if len(got) != 1 || !strings.HasPrefix(got[0], "dispatcher_") || len(got[0]) != len("dispatcher_")+12 {
			t.Fatalf("round %d: libraries after a dispatch: %v, want one dispatcher_<12 hex digits>", round, got)
		}
		if err := c.FunctionFlush(ctx).Err(); err != nil {
			t.Fatalf("FUNCTION FLUSH: %v", err)
		}
	}
	for _, id := range []string{"o0", "o1"} {
		if o, err := svc.GetOrder(ctx, "p", id); err != nil || o.CompID == "" {
			t.Fatalf("GetOrder %s: %+v, %v; want assigned", id, o, err)
		}
	}
}
