package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// TestRouteContextsConcurrent: requests to two routes with different
// parameters, many at once, each get the answer of their own route and
// parameters, and each access line names the route of its own request (by
// its X-Request-Id). front keeps chi's route contexts in a pool of its own
// (web26): one handed to a second request while the first still reads it,
// for its handler or its access line, mixes the two.
func TestRouteContextsConcurrent(t *testing.T) {
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	ctx := context.Background()
	pools := []string{"p1", "p2", "p3", "p4"}
	for _, p := range pools {
		if _, _, err := svc.PutPool(ctx, p, dispatch.PoolSpec{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.PutScale(ctx, p, "s-"+p, dispatch.ScaleSpec{}); err != nil {
			t.Fatal(err)
		}
	}
	var lines syncBuffer
	h := api.New(svc, api.Options{Logger: slog.New(slog.NewJSONHandler(&lines, nil))})
	srv := httptest.NewServer(h)
	defer srv.Close()

	type sent struct{ route, want string }
	var mu sync.Mutex
	byID := map[string]sent{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 60 {
				p := pools[(g+i)%len(pools)]
				path, s := "/v1/pools/"+p, sent{route: "/v1/pools/{pool}", want: `"name":"` + p + `"`}
				if i%2 == 1 {
					path = "/v1/pools/" + p + "/scales/s-" + p
					s = sent{route: "/v1/pools/{pool}/scales/{compId}", want: `"compId":"s-` + p + `"`}
				}
				id := fmt.Sprintf("rc-%d-%d", g, i)
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				req.Header.Set("X-Request-Id", id)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), s.want) {
					t.Errorf("GET %s: %d %s, want 200 with %s", path, resp.StatusCode, body, s.want)
				}
				mu.Lock()
				byID[id] = s
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	seen := 0
	for _, l := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
		var line struct {
			Msg       string `json:"msg"`
			Route     string `json:"route"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Msg != "request" {
			continue
		}
		s, ok := byID[line.RequestID]
		if !ok {
			continue
		}
		seen++
		if line.Route != s.route {
			t.Errorf("access line of %s: route %q, want %q", line.RequestID, line.Route, s.route)
		}
	}
	if seen != len(byID) {
		t.Errorf("%d access lines for %d requests", seen, len(byID))
	}
}
