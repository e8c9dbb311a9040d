package redis_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// BenchmarkRedisWork counts what Redis does per order inside the dispatch
// function (FCALL) and inside the minimal script (EVALSHA,
// cmd/dispatch-bench/ceiling/minimal.lua), for batches of 100 and of 1 over
// 16 Scales with the waterfill, each batch named after its first order as
// the Service names it (Store.BatchID), k batches a call
// (Store.DispatchMany). The minimal script runs in two forms: "minimal"
// names its orders itself from a prefix, as redis-benchmark runs it in
// redis-cpu.sh; "thin" gets their ids as arguments, as the thin service
// (dispatch-bench thin) sends them, which costs Redis less at batch 100
// (Lua makes no name). Each case starts its own Redis, makes 20 calls to
// warm it and then b.N measured ones.
//
// Run alone it reports redis-us/order (INFO commandstats). Run by
// cmd/dispatch-bench/ceiling/work.sh, whose redis-server is valgrind's
// callgrind counting only inside fcallCommand and evalShaCommand, with
// REDIS_WORK_CG set to the directory of its output, it zeroes the counts
// after the warm-up, dumps them after the measured calls and reports
// kIr/order, the instructions Redis ran inside the calls per order:
//
//	cmd/dispatch-bench/ceiling/work.sh   # BENCH="..." N=40
func BenchmarkRedisWork(b *testing.B) {
	cases := []struct {
		name     string
		batch, k int
	}{
		{"service/batch=100/k=1", 100, 1},
		{"service/batch=100/k=3", 100, 3},
		{"service/batch=1/k=1", 1, 1},
		{"service/batch=1/k=4", 1, 4},
		{"minimal/batch=100", 100, 0},
		{"minimal/batch=1", 1, 0},
		{"thin/batch=100", 100, -1},
		{"thin/batch=1", 1, -1},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			c := newClient(b, srv)
			var call func(i int)
			switch {
			case tc.k == 0:
				call = minimalCaller(b, c, tc.batch, false)
			case tc.k < 0:
				call = minimalCaller(b, c, tc.batch, true)
			default:
				call = serviceCaller(b, c, tc.batch, tc.k)
			}
			for i := range 20 {
				call(i)
			}
			cg := startWork(b, c)
			for i := 20; b.Loop(); i++ {
				call(i)
			}
			orders := float64(b.N * tc.batch * max(tc.k, 1))
			b.ReportMetric(float64(evalshaUsec(b, c))/orders, "redis-us/order")
			if cg != nil {
				b.ReportMetric(cg()/orders/1000, "kIr/order")
			}
		})
	}
}

// serviceCaller makes pool p of 16 Scales (the waterfill) and returns a
// function that makes call i: k batches of batch orders in one
// DispatchMany, each named by BatchID, with 20-byte order ids.
func serviceCaller(b *testing.B, c goredis.UniversalClient, batch, k int) func(int) {
	ctx := context.Background()
	st := redis.New(c, redis.Options{Retention: time.Hour})
	svc := dispatch.NewService(st, dispatch.Config{})
	putWaterfillPool(b, svc, "p", scaleNames(16))
	return func(i int) {
		reqs := make([]dispatch.DispatchRequest, k)
		for j := range reqs {
			req := dispatch.DispatchRequest{Pool: "p", Now: time.Now(), MaxCost: dispatch.DefaultMaxCost,
				UniqueIDs: true, Orders: make([]dispatch.OrderInput, batch)}
			for o := range req.Orders {
				req.Orders[o].ID = fmt.Sprintf("o%07d-%02d-%09d", i, j, o)
			}
			req.BatchID = st.BatchID(req)
			reqs[j] = req
		}
		for _, r := range st.DispatchMany(ctx, reqs) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
}

// minimalCaller loads minimal.lua on a load ZSET of 16 Scales and returns
// a function that runs it once for batch orders: named by the script from a
// prefix, as redis-benchmark runs it in redis-cpu.sh, or, when named, by
// ids in its arguments, as the thin service (dispatch-bench thin) sends
// them ("", the count, the ids), 20-byte ids like serviceCaller's.
func minimalCaller(b *testing.B, c goredis.UniversalClient, batch int, named bool) func(int) {
	ctx := context.Background()
	src, err := os.ReadFile("../../cmd/dispatch-bench/ceiling/minimal.lua")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 16 {
		if err := c.ZAdd(ctx, "{c}:load", goredis.Z{Member: fmt.Sprintf("scale-%02d", i)}).Err(); err != nil {
			b.Fatal(err)
		}
	}
	sc := goredis.NewScript(string(src))
	if err := sc.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	keys := []string{"{c}:load", "{c}:orders"}
	if named {
		return func(i int) {
			args := make([]any, 2, 2+batch)
			args[0], args[1] = "", batch
			for o := range batch {
				args = append(args, fmt.Sprintf("o%07d-%02d-%09d", i, 0, o))
			}
			if n, err := sc.EvalSha(ctx, c, keys, args...).Int(); err != nil || n != batch {
				b.Fatalf("minimal.lua with %d ids: %d, %v", batch, n, err)
			}
		}
	}
	return func(i int) {
		if n, err := sc.EvalSha(ctx, c, keys, fmt.Sprintf("o%09d", i), batch).Int(); err != nil || n != batch {
			b.Fatalf("minimal.lua for %d orders: %d, %v", batch, n, err)
		}
	}
}

// startWork resets Redis's command statistics and, when REDIS_WORK_CG
// names callgrind's output directory (work.sh), zeroes callgrind's counts
// in the server: it returns a function that dumps them and returns the
// instructions counted since, or nil without REDIS_WORK_CG.
func startWork(b *testing.B, c goredis.UniversalClient) func() float64 {
	ctx := context.Background()
	dir := os.Getenv("REDIS_WORK_CG")
	var pid string
	if dir != "" {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(line, "process_id:"); ok {
				pid = strings.TrimSpace(v)
			}
		}
		cgControl(b, "-i", "on", pid)
		cgControl(b, "-z", pid)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if dir == "" {
		return nil
	}
	return func() float64 {
		cgControl(b, "-d", pid)
		files, err := filepath.Glob(filepath.Join(dir, "*."+pid+".*"))
		if err != nil || len(files) != 1 {
			b.Fatalf("callgrind dump of %s in %s: %v %v", pid, dir, files, err)
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "totals: "); ok {
				n, err := strconv.ParseFloat(strings.Fields(v)[0], 64)
				if err != nil {
					b.Fatal(err)
				}
				return n
			}
		}
		b.Fatalf("no totals in %s", files[0])
		return 0
	}
}

// cgControl runs callgrind_control with args (the last the process id).
func cgControl(b *testing.B, args ...string) {
	if out, err := exec.Command("callgrind_control", args...).CombinedOutput(); err != nil {
		b.Fatalf("callgrind_control %v: %v: %s", args, err, out)
	}
}
