package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// startThin runs the thin mode in-process on a new redis-server and returns
// its base URL and a client of that Redis; the server stops with the test.
func startThin(t *testing.T) (string, *goredis.Client, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"thin", "-addr", "127.0.0.1:0", "-redis", srv.URL(), "-scales", "16"}, noEnv, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("thin: got %v, want nil after the context ended", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("thin did not stop")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v", err)
	}
	url, found := strings.CutPrefix(strings.TrimSpace(line), "thin listening on ")
	if !found {
		t.Fatalf("got %q, want thin listening on URL", line)
	}
	go io.Copy(io.Discard, pr)
	rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return url, rdb, srv
}

// post sends body to the pool's batches and returns the status and body.
func post(t *testing.T, url, pool, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/pools/"+pool+"/batches", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// loads returns the pool's load ZSET as compId → score.
func loads(t *testing.T, rdb *goredis.Client, pool string) map[string]float64 {
	t.Helper()
	zs, err := rdb.ZRangeWithScores(context.Background(), thinKeys(pool)[0], 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for _, z := range zs {
		m[z.Member.(string)] = z.Score
	}
	return m
}

func TestThinDispatchesABatch(t *testing.T) {
	url, rdb, _ := startThin(t)
	ctx := context.Background()

	// A pool whose loads differ (s-01 has 0 orders, s-16 has 15): the 30
	// orders go where taking the least loaded Scale, order after order,
	// would put them.
	var start []goredis.Z
	for i := range 16 {
		start = append(start, goredis.Z{Member: fmt.Sprintf("s-%02d", i+1), Score: float64(i)})
	}
	if err := rdb.ZAdd(ctx, thinKeys("p")[0], start...).Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 30 {
		ids = append(ids, fmt.Sprintf(`{"id":"o-%d"}`, i))
	}
	status, body := post(t, url, "p", `{"orders":[`+strings.Join(ids, ",")+`]}`)
	if status != http.StatusCreated || !strings.Contains(body, `"orders":30`) {
		t.Fatalf("POST: got %d %q, want 201 with 30 orders", status, body)
	}

	want := make([]float64, 16)
	for i := range want {
		want[i] = float64(i)
	}
	for range 30 { // the reference: the least loaded Scale, one order at a time
		want[slices.Index(want, slices.Min(want))]++
	}
	got := loads(t, rdb, "p")
	gotLoads := make([]float64, 0, len(got))
	for _, l := range got {
		gotLoads = append(gotLoads, l)
	}
	slices.Sort(gotLoads)
	slices.Sort(want)
	if !slices.Equal(gotLoads, want) {
		t.Errorf("loads: got %v, want %v", gotLoads, want)
	}
	orders, err := rdb.HGetAll(ctx, thinKeys("p")[1]).Result()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]float64{}
	for i := range 30 {
		won, ok := orders[fmt.Sprintf("o-%d", i)]
		if !ok {
			t.Fatalf("order o-%d: not recorded (got %v)", i, orders)
		}
		per[won]++
	}
	for _, z := range start {
		id := z.Member.(string)
		if got[id] != z.Score+per[id] {
			t.Errorf("%s: load %v, want %v + its %v orders", id, got[id], z.Score, per[id])
		}
	}
	if len(orders) != 30 {
		t.Errorf("orders recorded: got %d, want 30", len(orders))
	}
}

func TestThinSeedsAPoolAndNamesOrders(t *testing.T) {
	url, rdb, _ := startThin(t)
	status, body := post(t, url, "fresh", `{"orders":[{},{},{}]}`)
	if status != http.StatusCreated {
		t.Fatalf("POST: got %d %q, want 201", status, body)
	}
	got := loads(t, rdb, "fresh")
	var sum float64
	for _, l := range got {
		sum += l
		if l > 1 {
			t.Errorf("a Scale has %v orders, want at most 1 of 3 on 16 unloaded Scales", l)
		}
	}
	if len(got) != 16 || sum != 3 {
		t.Errorf("pool: got %d Scales with %v orders, want 16 with 3", len(got), sum)
	}
	if n, err := rdb.HLen(context.Background(), thinKeys("fresh")[1]).Result(); err != nil || n != 3 {
		t.Errorf("orders recorded: got %d (%v), want 3", n, err)
	}
}

func TestThinRefusesBadRequests(t *testing.T) {
	url, rdb, srv := startThin(t)
	for _, body := range []string{`{`, `{"orders":[]}`, `{"orders":[1]}`, `{"orders":{}}`, ``} {
		if status, got := post(t, url, "p", body); status != http.StatusBadRequest ||
			!strings.Contains(got, "urn:dispatcher:problem:invalid-body") {
			t.Errorf("POST %q: got %d %q, want 400 invalid-body", body, status, got)
		}
	}
	if n, err := rdb.Exists(context.Background(), thinKeys("p")...).Result(); err != nil || n != 0 {
		t.Errorf("keys after bad requests: got %d (%v), want none", n, err)
	}
	resp, err := http.Get(url + "/v1/pools/p/batches")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: got %d, want 405", resp.StatusCode)
	}

	srv.Stop()
	if status, got := post(t, url, "p", `{"orders":[{"id":"a"}]}`); status != http.StatusServiceUnavailable ||
		!strings.Contains(got, "urn:dispatcher:problem:unavailable") {
		t.Errorf("POST with Redis down: got %d %q, want 503 unavailable", status, got)
	}
}

func TestRunAgainstThin(t *testing.T) {
	url, rdb, _ := startThin(t)
	rep := runLoadJSON(t, context.Background(), "-url", url, "-pool", "load", "-concurrency", "4",
		"-batch", "7", "-duration", "300ms")
	if rep.Total.Orders == 0 || len(rep.Total.Errors) != 0 {
		t.Fatalf("run: got %d orders and errors %v, want some and none", rep.Total.Orders, rep.Total.Errors)
	}
	n, err := rdb.HLen(context.Background(), thinKeys("load")[1]).Result()
	if err != nil || n != rep.Total.Orders {
		t.Errorf("orders recorded: got %d (%v), want %d, the orders the tool counted", n, err, rep.Total.Orders)
	}
	var sum float64
	for _, l := range loads(t, rdb, "load") {
		sum += l
	}
	if int64(sum) != rep.Total.Orders {
		t.Errorf("loads sum to %v, want %d", sum, rep.Total.Orders)
	}
}

func TestThinConfig(t *testing.T) {
	for _, args := range [][]string{{"-scales", "0"}, {"-redis", "http://x"}, {"-addr", ""}, {"-for", "-1s"}} {
		if _, err := parseThinConfig(args, io.Discard); err == nil {
			t.Errorf("%q: got no error, want one", args)
		}
	}
}

// TestMinimalNamesOrdersByPrefix runs minimal.lua as redis-cpu.sh's
// redis-benchmark does, with an id prefix and a count instead of ids.
func TestMinimalNamesOrdersByPrefix(t *testing.T) {
	rdb := goredis.NewClient(&goredis.Options{Addr: redistest.Start(t).Addr()})
	defer rdb.Close()
	ctx := context.Background()
	keys := []string{"{m}:load", "{m}:orders"}
	if err := rdb.ZAdd(ctx, keys[0], goredis.Z{Member: "a", Score: 0}, goredis.Z{Member: "b", Score: 2}).Err(); err != nil {
		t.Fatal(err)
	}
	n, err := goredis.NewScript(minimalLua).Run(ctx, rdb, keys, "x", 4).Int()
	if err != nil || n != 4 {
		t.Fatalf("minimal.lua: got %d, %v; want 4", n, err)
	}
	orders, err := rdb.HGetAll(ctx, keys[1]).Result()
	if err != nil {
		t.Fatal(err)
	}
	// a is raised to b's level (2 orders), then each takes one more.
	want := map[string]string{"x:1": "a", "x:2": "a", "x:3": "a", "x:4": "b"}
	if fmt.Sprint(orders) != fmt.Sprint(want) {
		t.Errorf("orders: got %v, want %v", orders, want)
	}
	zs, err := rdb.ZRangeWithScores(ctx, keys[0], 0, -1).Result()
	if err != nil || fmt.Sprint(zs) != "[{3 a} {3 b}]" {
		t.Errorf("loads: got %v (%v), want a and b at 3", zs, err)
	}
}
