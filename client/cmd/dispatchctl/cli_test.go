package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
)

func TestParseInterleaved(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string
		key  string
	}{
		{[]string{"eu", "o-1", "-key", "k", "o-2"}, "eu o-1 o-2", "k"},
		{[]string{"-key", "k", "eu"}, "eu", "k"},
		{[]string{"eu", "--", "-key", "o-1"}, "eu -key o-1", ""},
		{[]string{"eu"}, "eu", ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		key := fs.String("key", "", "")
		pos, err := parseInterleaved(fs, c.args)
		if err != nil || strings.Join(pos, " ") != c.pos || *key != c.key {
			t.Errorf("%v: got %q, key %q, %v; want %q, key %q", c.args, pos, *key, err, c.pos, c.key)
		}
	}
}

func TestFind(t *testing.T) {
	for in, want := range map[string]string{
		"scales eu":              "scales",
		"scales get eu S1":       "scales get",
		"pools":                  "pools",
		"orders complete eu o-1": "orders complete",
		"orders":                 "",
	} {
		c, _ := find(strings.Fields(in))
		got := ""
		if c != nil {
			got = c.name
		}
		if got != want {
			t.Errorf("find(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadOrders(t *testing.T) {
	orders, err := readOrders(strings.NewReader("{\"id\":\"o-1\"}\n\n  {\"key\":\"c\"}  \n{}\n"))
	if err != nil || len(orders) != 3 || orders[0].ID != "o-1" || orders[1].Key != "c" || orders[2] != (client.OrderInput{}) {
		t.Fatalf("readOrders: %+v, %v", orders, err)
	}
	for _, bad := range []string{"o-1\n", "{\"id\":1}\n", "{\"name\":\"x\"}\n", "{} {}\n"} {
		if _, err := readOrders(strings.NewReader(bad)); err == nil {
			t.Errorf("readOrders(%q): no error", bad)
		}
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		s    client.Scale
		top  int64
		want string
	}{
		{client.Scale{Outstanding: 5, BaseLoad: 5}, 20, "█████▒▒▒▒▒          "},
		{client.Scale{Outstanding: 20}, 20, "████████████████████"},
		{client.Scale{BaseLoad: 2, MaxOrders: 10}, 20, "▒▒       |          "},
		{client.Scale{}, 20, "                    "},
	} {
		if got := bar(c.s, c.top, 20); got != c.want {
			t.Errorf("bar(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestFrameFitsTheScreen(t *testing.T) {
	s := snapshot{At: time.Now(), Pool: &client.Pool{Name: "eu", Strategy: client.StrategyWaterfill}, ScaleCount: 50}
	for i := range 50 {
		s.Scales = append(s.Scales, client.Scale{CompID: "S" + strings.Repeat("x", i), OrderCount: int64(i), Outstanding: int64(i), State: client.ScaleActive})
	}
	lines := frame(s, 60, 10, time.Second, false)
	if len(lines) > 10 {
		t.Fatalf("%d lines on a screen of 10", len(lines))
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 60 {
			t.Errorf("line of %d runes on a screen 60 wide: %q", n, l)
		}
	}
	if last := lines[len(lines)-1]; last != "the 6 least loaded of 50 Scales; 44 not shown" {
		t.Errorf("footer %q", last)
	}
}

// TestFrameOfALargePool draws a stream's snapshot of a pool over 1,000
// Scales: the least loaded at the top, the most loaded at the bottom, a
// line for those between, and the counters.
func TestFrameOfALargePool(t *testing.T) {
	s := snapshot{At: time.Now(), Pool: &client.Pool{Name: "eu", Strategy: client.StrategyWaterfill}, ScaleCount: 5000, Stream: true,
		Counters: &client.Counters{Dispatched: 7, Completed: 3}, Histogram: &client.Histogram{Min: 0, Width: 1, Counts: []int64{5000}}}
	for i := range 1000 {
		s.Scales = append(s.Scales, client.Scale{CompID: fmt.Sprintf("S%04d", i), OrderCount: int64(i), State: client.ScaleActive})
	}
	lines := frame(s, 80, 12, time.Second, false)
	if len(lines) > 12 {
		t.Fatalf("%d lines on a screen of 12:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"dispatched 7 · completed 3", "S0000 ", "S0002 ", "⋮ 4994 not shown", "S0997 ", "S0999 ", "the 3 least and 3 most loaded of 5000 Scales; 4994 not shown"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the frame:\n%s", want, text)
		}
	}
	if strings.Contains(text, "S0003 ") || strings.Contains(text, "S0996 ") {
		t.Errorf("more Scales than fit:\n%s", text)
	}
}

// TestWatchPollsAnOlderServer runs watch against a service without the
// watch stream (404 for its route): it falls back to polling the pool and
// its Scale list.
func TestWatchPollsAnOlderServer(t *testing.T) {
	var watched, listed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/pools/eu/watch":
			watched.Add(1)
			http.NotFound(w, r)
		case "/v1/pools/eu":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"name":"eu","strategy":"waterfill","scaleCount":1}`)
		case "/v1/pools/eu/scales":
			listed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"scales":[{"compId":"S1","orderCount":2,"state":"active"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	getenv := urlEnv(srv.URL)
	code := run(context.Background(), []string{"-o", "json", "watch", "eu", "-n", "2", "-interval", "100ms"}, getenv, strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || watched.Load() != 1 || listed.Load() != 2 {
		t.Fatalf("%d frames, %d watch requests, %d lists: want 2, 1, 2:\n%s", len(lines), watched.Load(), listed.Load(), out.String())
	}
	var s snapshot
	if err := json.Unmarshal([]byte(lines[1]), &s); err != nil || s.Stream || len(s.Scales) != 1 || s.Scales[0].CompID != "S1" {
		t.Fatalf("frame %s (%v): want S1, polled", lines[1], err)
	}
}

// TestWatchOfAnUnknownPool: a 404 pool-not-found is an error, not a
// reason to poll.
func TestWatchOfAnUnknownPool(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"type":"urn:dispatcher:problem:pool-not-found","title":"Pool not found","status":404}`)
	}))
	defer srv.Close()
	var out, errOut bytes.Buffer
	getenv := urlEnv(srv.URL)
	if code := run(context.Background(), []string{"watch", "eu", "-n", "1"}, getenv, strings.NewReader(""), &out, &errOut); code == 0 {
		t.Fatalf("exit 0 for an unknown pool: %s", out.String())
	}
}

// urlEnv is an environment that holds only DISPATCHER_URL=url.
func urlEnv(url string) func(string) string {
	return func(k string) string {
		if k == "DISPATCHER_URL" {
			return url
		}
		return ""
	}
}
