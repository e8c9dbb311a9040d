package redis_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestCheapStrategiesReadLittle dispatches one order with each strategy
// that must not read the whole pool, in a pool of 10 Scales and in one of
// 100,000, and counts the entries the script reads and writes (MONITOR
// shows every command a script runs): the big pool must cost what the small
// one costs. consistent-hash runs at 10,000 Scales: its ring then holds 10^6
// points, and building one of 10^7 for 100,000 Scales takes minutes.
func TestCheapStrategiesReadLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("registers 100,000 Scales")
	}
	srv := redistest.Start(t)
	// Switching a pool of 10,000 Scales to consistent-hash builds its ring
	// in one script call, longer than the default read timeout.
	c, err := redis.NewClient(srv.URL()+"?read_timeout=5m", "single")
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	svc := dispatch.NewService(redis.New(c, redis.Options{}), dispatch.Config{})
	ctx := context.Background()
	for _, st := range dispatch.Strategies {
		if perOrder(st) {
			continue
		}
		t.Run(string(st), func(t *testing.T) {
			big := 100_000
			if kind(st) == balancing.Hashed {
				big = 10_000
			}
			var cost [2]int64
			for i, n := range []int{10, big} {
				pool := fmt.Sprintf("%s-%d", st, n)
				mustPool(t, svc, pool)
				registerEqualScales(t, c, pool, n)
				if _, _, err := svc.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &st}); err != nil {
					t.Fatalf("PutPool: %v", err)
				}
				one := func(id string) {
					in := dispatch.DispatchInput{Pool: pool, Orders: []dispatch.OrderInput{{ID: id}}}
					if _, _, err := svc.Dispatch(ctx, in); err != nil {
						t.Fatalf("Dispatch: %v", err)
					}
				}
				one("warm") // the script loaded, the strategy's state written
				calls := scriptCalls(t, c, srv.Addr(), func() { one("o") })
				cost[i] = entries(calls)
				if cost[i] > 40 {
					t.Errorf("%d Scales: one order touches %d entries, want at most 40:\n%s", n, cost[i], formatCalls(calls))
				}
			}
			t.Logf("one order touches %d entries among 10 Scales, %d among %d", cost[0], cost[1], big)
			if cost[1] > cost[0]+2 {
				t.Errorf("one order touches %d entries among %d Scales, %d among 10", cost[1], big, cost[0])
			}
		})
	}
}

// TestTooExpensiveChangesNothing sends each strategy that reads every
// eligible Scale for each order a batch over the cost cap, as a dry run and
// for real: ErrTooExpensive, and the pool as it was. At the cap exactly,
// the batch goes through.
func TestTooExpensiveChangesNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	st := redis.New(c, redis.Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, strategy := range dispatch.Strategies {
		if !perOrder(strategy) {
			continue
		}
		pool := "p-" + string(strategy)
		if _, _, err := st.PutPool(ctx, pool, dispatch.PoolSpec{Strategy: &strategy}, t0); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"A", "B", "C", "D"} {
			if _, _, err := st.PutScale(ctx, pool, id, dispatch.ScaleSpec{}, t0); err != nil {
				t.Fatal(err)
			}
		}
		// Leave state behind, which a refused batch must not touch.
		req := dispatch.DispatchRequest{Pool: pool, BatchID: "b0", Now: t0, MaxCost: 8,
			Orders: []dispatch.OrderInput{{ID: "o0"}}, Rand: []uint64{5, 7}}
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Fatalf("%s: Dispatch under the cap: %v", strategy, err)
		}
		s := &sim{t: t, c: c}
		before := s.state(pool)
		req = dispatch.DispatchRequest{Pool: pool, BatchID: "b1", Now: t0, MaxCost: 11,
			Orders: []dispatch.OrderInput{{ID: "o1"}, {ID: "o2"}, {ID: "o3"}}}
		for _, dry := range []bool{true, false} {
			r := req
			if dry {
				r.DryRun, r.BatchID = true, ""
			}
			_, _, err := st.Dispatch(ctx, r)
			if !errors.Is(err, dispatch.ErrTooExpensive) {
				t.Fatalf("%s: 4 Scales × 3 orders over a cap of 11 (dry=%v): got %v, want %v", strategy, dry, err, dispatch.ErrTooExpensive)
			}
			if !strings.Contains(err.Error(), "4 eligible Scales × 3 orders") {
				t.Errorf("%s: the error does not say the cost: %v", strategy, err)
			}
			if after := s.state(pool); after != before {
				t.Fatalf("%s: a refused batch changed the pool:\n%s\nto\n%s", strategy, before, after)
			}
			if _, err := st.GetOrder(ctx, pool, "o1", time.Now()); !errors.Is(err, dispatch.ErrOrderNotFound) {
				t.Fatalf("%s: a refused batch recorded order o1: %v", strategy, err)
			}
		}
		req.MaxCost = 12
		if _, _, err := st.Dispatch(ctx, req); err != nil {
			t.Errorf("%s: 4 Scales × 3 orders at a cap of 12: %v", strategy, err)
		}
	}
}

// scriptCalls returns the commands that scripts ran on the Redis at addr
// while f ran, as MONITOR shows them: {"ZRANGE", key, args…}.
func scriptCalls(t testing.TB, c goredis.UniversalClient, addr string, f func()) [][]string {
	t.Helper()
	var out [][]string
	for _, g := range scriptGroups(t, c, addr, f) {
		out = append(out, g...)
	}
	return out
}

// scriptGroups is scriptCalls with the commands grouped by the script call
// (FCALL or FCALL_RO) that ran them.
func scriptGroups(t testing.TB, c goredis.UniversalClient, addr string, f func()) [][][]string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("MONITOR: %v", err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatalf("MONITOR: %v", err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	f()
	marker := "end-of-calls-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := c.Echo(context.Background(), marker).Err(); err != nil {
		t.Fatalf("ECHO: %v", err)
	}
	var out [][][]string
	for {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v", err)
		}
		if strings.Contains(line, marker) {
			return out
		}
		if !strings.Contains(line, " lua] ") {
			if l := strings.ToLower(line); strings.Contains(l, `"fcall"`) || strings.Contains(l, `"fcall_ro"`) {
				out = append(out, nil)
			}
			continue
		}
		var call []string
		for _, m := range quoted.FindAllStringSubmatch(line, -1) {
			call = append(call, m[1])
		}
		call[0] = strings.ToUpper(call[0])
		if len(out) == 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], call)
	}
}

var quoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// whole stands for a command that reads a whole key.
const whole = 1 << 30

// entries returns how many entries the calls read or write: each command
// costs the entries it returns or changes (a lookup by rank or score counts
// 1; the skip list makes it O(log N)), and one that reads a whole key counts
// as whole.
func entries(calls [][]string) int64 {
	var n int64
	for _, c := range calls {
		args := c[1:]
		switch c[0] {
		case "ZRANGE":
			n += rangeEntries(args)
		case "LRANGE":
			n += rangeEntries(args)
		case "HMGET", "ZREM", "HDEL", "RPUSH", "DEL", "UNLINK", "EXISTS":
			n += int64(len(args) - 1)
		case "HSET", "ZADD":
			n += int64(len(args)-1) / 2
		case "HGETALL", "HKEYS", "HVALS", "ZUNIONSTORE", "SMEMBERS":
			n += whole
		default:
			n++
		}
	}
	return n
}

// rangeEntries is the cost of ZRANGE or LRANGE key start stop [options]:
// the count of a LIMIT, else the ranks from start to stop, both counted
// from the start or both from the end (-1 -1: the last entry); a range by
// score or name without LIMIT, or from a rank counted from the start to
// one counted from the end, reads the whole key.
func rangeEntries(args []string) int64 {
	byValue := false
	for i, a := range args {
		switch strings.ToUpper(a) {
		case "LIMIT":
			if i+2 < len(args) {
				if cnt, err := strconv.ParseInt(args[i+2], 10, 64); err == nil && cnt >= 0 {
					return max(cnt, 1)
				}
			}
			return whole
		case "BYLEX", "BYSCORE":
			byValue = true
		}
	}
	if byValue || len(args) < 3 {
		return whole
	}
	lo, err1 := strconv.ParseInt(args[1], 10, 64)
	hi, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil || (lo < 0) != (hi < 0) {
		return whole
	}
	return max(hi-lo+1, 1)
}

func formatCalls(calls [][]string) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(strings.Join(c, " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestRandomNumbersReachTheScripts dispatches with the largest random
// numbers a request may carry: the script reads them exactly (random picks
// rank r1 mod n, as balancing.Random does), and one of 2^53 is refused
// before anything is sent.
func TestRandomNumbersReachTheScripts(t *testing.T) {
	c := newClient(t, redistest.Start(t))
	st := redis.New(c, redis.Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	random := dispatch.Random
	if _, _, err := st.PutPool(ctx, "p", dispatch.PoolSpec{Strategy: &random}, t0); err != nil {
		t.Fatal(err)
	}
	ids := []string{"A", "B", "C", "D", "E", "F", "G"}
	for _, id := range ids {
		if _, _, err := st.PutScale(ctx, "p", id, dispatch.ScaleSpec{}, t0); err != nil {
			t.Fatal(err)
		}
	}
	const top = 1<<53 - 1
	rnd := []uint64{top, 0, top - 1, 0, top - 2, 0, 1 << 52, 0}
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "b1", Now: t0, Rand: rnd,
		Orders: []dispatch.OrderInput{{ID: "o1"}, {ID: "o2"}, {ID: "o3"}, {ID: "o4"}}}
	b, _, err := st.Dispatch(ctx, req)
	if err != nil {
		t.Fatalf("Dispatch: %v", err)
	}
	var want []string
	for i := range req.Orders {
		want = append(want, ids[rnd[2*i]%uint64(len(ids))])
	}
	if got := assigned(b); got != strings.Join(want, " ") {
		t.Errorf("got %s, want %s", got, strings.Join(want, " "))
	}
	req.BatchID, req.Orders, req.Rand = "b2", []dispatch.OrderInput{{ID: "o5"}}, []uint64{1 << 53, 0}
	if _, _, err := st.Dispatch(ctx, req); err == nil || errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("Dispatch with a random number of 2^53: got %v, want a plain error", err)
	}
}
