package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/internal/loadtest"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestRedisFull fills a Redis with a small maxmemory (noeviction, as
// docs/operations.md asks) through a real dispatcher process: once Redis
// refuses writes, dispatches and completions answer 503 store-full, never
// 500; reads still answer; and once an operator gives Redis room, the
// refused batches go through with their keys, and every batch acknowledged
// is whole and counted once.
func TestRedisFull(t *testing.T) {
	srv := redistest.StartWith(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	bin := buildDispatcher(t)
	r := startProc(t, bin, "replica", redisEnv(srv.URL()))
	setUpPool(t, r.URL, "p", 5)
	l := loadtest.New(loadtest.Spec{Pool: "p"})
	defer l.Client.CloseIdleConnections()

	// Batches of 50 orders until Redis refuses three of them.
	var refused []loadtest.Pending
	var refusedBodies [][]byte
	for b := 0; len(refused) < 3; b++ {
		if b == 2000 {
			t.Fatalf("%d batches acknowledged and none refused: is maxmemory set?", len(l.Acks))
		}
		p, body := fullBatch(b)
		a, kind, err := l.Post(r.URL, p, body)
		switch kind {
		case "":
			l.Acks = append(l.Acks, a)
		case "unavailable", "outcome-unknown":
			var pr struct{ Type, Detail, BatchID string }
			if jerr := json.Unmarshal([]byte(err.Error()), &pr); jerr != nil || !strings.HasSuffix(pr.Type, ":store-full") ||
				!strings.Contains(pr.Detail, "maxmemory") || pr.BatchID == "" {
				t.Fatalf("batch %d refused with %s, want a 503 store-full problem that names maxmemory and the batchId", b, err)
			}
			refused, refusedBodies = append(refused, p), append(refusedBodies, body)
		default:
			t.Fatalf("batch %d: %s %v, want 201 or 503 store-full", b, kind, err)
		}
	}
	// A completion writes too: refused alike, nothing changed. Each batch
	// above was refused as its own request took Redis past maxmemory; a
	// one-order completion takes less and may fit, so the limit goes below
	// what Redis holds first.
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer c.Close()
	info, err := c.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(info, "used_memory:")
	used, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(after, "\n", 2)[0]), 10, 64)
	if err != nil {
		t.Fatalf("INFO memory: %v", err)
	}
	if err := c.ConfigSet(context.Background(), "maxmemory", strconv.FormatInt(used/2, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	status, prob := postJSON(t, r.URL+"/v1/pools/p/completions",
		fmt.Sprintf(`{"orders":[{"id":%q}]}`, l.Acks[0].Orders[0]))
	if status != http.StatusServiceUnavailable || !strings.HasSuffix(fmt.Sprint(prob["type"]), ":store-full") {
		t.Errorf("completion at maxmemory: %d %v, want 503 store-full", status, prob)
	}
	t.Logf("%d batches of 50 orders acknowledged before Redis (maxmemory 2mb) refused writes", len(l.Acks))
	// Reads answer.
	for _, a := range []loadtest.Ack{l.Acks[0], l.Acks[len(l.Acks)-1]} {
		var b loadtest.BatchAnswer
		if status := getJSON(t, l.Client, r.URL+"/v1/pools/p/batches/"+a.BatchID, &b); status != http.StatusOK || len(b.Assignments) != 50 {
			t.Errorf("GET batch %s at maxmemory: %d, %d assignments; want 200 and 50", a.BatchID, status, len(b.Assignments))
		}
	}

	// Room again: the refused batches go through with their keys.
	if err := c.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for i, p := range refused {
		a, kind, err := l.Post(r.URL, p, refusedBodies[i])
		if err != nil {
			t.Fatalf("refused batch %s again once Redis has room: %s %v", p.Key, kind, err)
		}
		if a.Replayed {
			t.Errorf("refused batch %s: replayed, want it applied now (it was refused, not applied)", p.Key)
		}
		l.Acks = append(l.Acks, a)
	}
	// Every acknowledged batch is whole, its orders assigned (the
	// completion refused above changed nothing), and counted once.
	verify(t, r.URL, l)
}

// fullBatch is batch b of TestRedisFull: 50 orders with ids and keys that
// take room, and an Idempotency-Key.
func fullBatch(b int) (loadtest.Pending, []byte) {
	p := loadtest.Pending{Key: fmt.Sprintf("full-%06d", b)}
	var body bytes.Buffer
	body.WriteString(`{"orders":[`)
	for j := range 50 {
		id := fmt.Sprintf("full-%06d-order-%02d", b, j)
		p.Orders = append(p.Orders, id)
		if j > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"id":%q,"key":"customer-%06d"}`, id, b*50+j)
	}
	body.WriteString(`]}`)
	return p, body.Bytes()
}

// postJSON posts body to url and returns the status and the decoded answer.
func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("POST %s: %d %q: %v", url, resp.StatusCode, data, err)
	}
	return resp.StatusCode, m
}
