package redis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestFunctionLibraryReloads: a dispatch loads the library into a
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
	if got := libs(); len(got) != 1 {
		t.Fatalf("libraries after the pool's calls: %v, want one", got)
	}
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatalf("FUNCTION FLUSH: %v", err)
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

// TestLibraryFunctions: the library Redis loads registers exactly the
// functions of functions.go, each with its flags (no-writes for the reads
// that FCALL_RO runs), and the metrics name each of them.
func TestLibraryFunctions(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m := redis.NewMetrics(reg)
	c.AddHook(m.Hook())
	s := redis.New(c, redis.Options{})
	if _, err := s.GetPool(ctx, "p"); !errors.Is(err, dispatch.ErrPoolNotFound) {
		t.Fatalf("GetPool: %v, want ErrPoolNotFound", err)
	}
	list, err := c.FunctionList(ctx, goredis.FunctionListQuery{}).Result()
	if err != nil || len(list) != 1 {
		t.Fatalf("FUNCTION LIST: %v, %v; want one library", list, err)
	}
	got := map[string][]string{}
	for _, f := range list[0].Functions {
		got[f.Name] = f.Flags
	}
	want := redis.Functions()
	if len(got) != len(want) {
		t.Errorf("the library registers %d functions, functions.go lists %d", len(got), len(want))
	}
	for _, f := range want {
		flags, ok := got[f.Registered]
		if !ok {
			t.Errorf("function %s (%s) not registered", f.Name, f.Registered)
			continue
		}
		slices.Sort(flags)
		slices.Sort(f.Flags)
		if !slices.Equal(flags, f.Flags) {
			t.Errorf("function %s: flags %v, want %v", f.Name, flags, f.Flags)
		}
		if !strings.HasSuffix(f.Registered, strings.TrimPrefix(list[0].Name, "dispatcher")) {
			t.Errorf("function %s registered as %s, not after library %s", f.Name, f.Registered, list[0].Name)
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		for _, mt := range fam.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "script" && l.GetValue() != "read" {
					t.Errorf("metric %s: script %q, want read", fam.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestUndeclaredKeyFails: a function whose Lua names a key that its Go
// declaration leaves out fails with DISPATCH BUG, naming the function and
// the key, rather than running a command on a nil key; the store's own
// library, which declares it, reads the same order.
func TestUndeclaredKeyFails(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := context.Background()
	st := redis.New(c, redis.Options{})
	svc := dispatch.NewService(st, dispatch.Config{})
	mustPool(t, svc, "p", "A")
	in := dispatch.DispatchInput{Pool: "p", Orders: []dispatch.OrderInput{{ID: "o1"}}}
	if _, _, err := svc.Dispatch(ctx, in); err != nil {
		t.Fatal(err)
	}
	code, fcall, keys := redis.LibraryWithout("read", "orders", "p")
	if err := c.FunctionLoad(ctx, code).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	now := time.Now().UnixMilli()
	_, err := c.FCallRO(ctx, fcall, keys, "order", "o1", now, time.Hour.Milliseconds()).Result()
	want := "DISPATCH BUG read reads K.orders, a key functions.go does not declare for it"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("read without K.orders: %v, want %q", err, want)
	}
	if o, err := svc.GetOrder(ctx, "p", "o1"); err != nil || o.CompID != "A" {
		t.Fatalf("GetOrder through the store's library: %+v, %v; want it on A", o, err)
	}
}
