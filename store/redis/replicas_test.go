package redis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestReplicasBehaveAsOne runs three dispatcher HTTP servers, each with its
// own Redis client and Service, on one Redis, and has many clients post
// batches to all three at once. Afterwards no order is assigned twice, every
// Scale's counts equal its recorded orders, and the waterfill from equal
// counts has kept the spread at most 1.
func TestReplicasBehaveAsOne(t *testing.T) {
	srv := redistest.Start(t)
	var replicas []string
	var store *redis.Store
	for range 3 {
		store = newStore(t, srv, redis.Options{})
		h := httptest.NewServer(api.New(dispatch.NewService(store, dispatch.Config{}), api.Options{}))
		t.Cleanup(h.Close)
		replicas = append(replicas, h.URL)
	}
	const scales, clients, batches = 7, 12, 25
	httpDo(t, "PUT", replicas[0]+"/v1/pools/p", "", `{"strategy":"waterfill"}`, http.StatusCreated)
	for i := range scales {
		httpDo(t, "PUT", fmt.Sprintf("%s/v1/pools/p/scales/S%d", replicas[i%3], i), "", `{}`, http.StatusCreated)
	}

	type answer struct {
		BatchID     string `json:"batchId"`
		Assignments []struct {
			OrderID string `json:"orderId"`
			CompID  string `json:"compId"`
		} `json:"assignments"`
	}
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for b := range batches {
				var body bytes.Buffer
				body.WriteString(`{"orders":[`)
				for j := range 1 + (c*7+b*3)%20 {
					if j > 0 {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"id":"c%d-b%d-o%d"}`, c, b, j)
				}
				body.WriteString(`]}`)
				key := ""
				if b%5 == 0 {
					key = fmt.Sprintf("key-%d-%d", c, b)
				}
				var a answer
				raw := httpDo(t, "POST", replicas[(c+b)%3]+"/v1/pools/p/batches", key, body.String(), http.StatusCreated)
				if err := json.Unmarshal(raw, &a); err != nil {
					t.Errorf("batch answer %s: %v", raw, err)
					return
				}
				if key != "" {
					// The same request again, on another replica: the same batch.
					again := httpDo(t, "POST", replicas[(c+b+1)%3]+"/v1/pools/p/batches", key, body.String(), http.StatusCreated)
					if !bytes.Equal(again, raw) {
						t.Errorf("replay on another replica: got %s, want %s", again, raw)
					}
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	ctx := context.Background()
	seen := make(map[string]string)
	var ids []string
	for _, a := range answers {
		for _, as := range a.Assignments {
			if prev, dup := seen[as.OrderID]; dup {
				t.Fatalf("order %s assigned twice: %s and %s", as.OrderID, prev, as.CompID)
			}
			seen[as.OrderID] = as.CompID
			ids = append(ids, as.OrderID)
			o, err := store.GetOrder(ctx, "p", as.OrderID, time.Now())
			if err != nil || o.CompID != as.CompID || o.BatchID != a.BatchID {
				t.Fatalf("order %s: recorded %+v, %v; answered %s in batch %s", as.OrderID, o, err, as.CompID, a.BatchID)
			}
		}
	}
	checkCounts(t, store, "p", ids)
	list, _, err := store.ListScales(ctx, "p", dispatch.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sc := range list {
		total += sc.Outstanding
	}
	if total != int64(len(ids)) {
		t.Errorf("outstanding orders: %d, want %d", total, len(ids))
	}
	if spread := list[len(list)-1].OrderCount() - list[0].OrderCount(); spread > 1 {
		t.Errorf("spread %d after %d orders over %d Scales, want at most 1: %v", spread, len(ids), scales, list)
	}
}

// httpDo sends a request with an optional Idempotency-Key and returns the
// body, failing the test unless the status is want.
func httpDo(t testing.TB, method, url, key, body string, want int) []byte {
	req, err := http.NewRequest(method, url, bytes.NewBufferString(body))
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return nil
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("%s %s: status %d, want %d: %s", method, url, resp.StatusCode, want, out.String())
	}
	return out.Bytes()
}
