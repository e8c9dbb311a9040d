package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// noEnv is a getenv with nothing set.
func noEnv(string) string { return "" }

// runTool runs the command line args in-process and returns its stdout.
func runTool(t testing.TB, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, noEnv, &stdout, &stderr)
	if err != nil {
		t.Logf("dispatch-bench %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), err
}

// runLoadJSON runs the run mode with -json and returns its report.
func runLoadJSON(t testing.TB, ctx context.Context, args ...string) loadReport {
	t.Helper()
	out, err := runTool(t, ctx, append([]string{"run", "-json", "-progress=false"}, args...)...)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var rep loadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	return rep
}

// fakeService records the orders of every batch it accepts, answers every
// failEvery-th batch 503 without recording it, and counts order ids and
// idempotency keys it sees more than once.
type fakeService struct {
	failEvery int

	mu         sync.Mutex
	requests   int
	failures   int
	orders     int
	ids        map[string]int
	keys       map[string]int
	noKey      int
	duplicates int
}

func newFakeService(failEvery int) *fakeService {
	return &fakeService{failEvery: failEvery, ids: map[string]int{}, keys: map[string]int{}}
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Orders []struct {
			ID string `json:"id"`
		} `json:"orders"`
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/batches") {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if f.failEvery > 0 && f.requests%f.failEvery == 0 {
		f.failures++
		http.Error(w, `{"status":503}`, http.StatusServiceUnavailable)
		return
	}
	if key := r.Header.Get("Idempotency-Key"); key == "" {
		f.noKey++
	} else if f.keys[key]++; f.keys[key] > 1 {
		f.duplicates++
	}
	var resp strings.Builder
	resp.WriteString(`{"batchId":"b","assignments":[`)
	for i, o := range in.Orders {
		if f.ids[o.ID]++; f.ids[o.ID] > 1 {
			f.duplicates++
		}
		f.orders++
		if i > 0 {
			resp.WriteString(",")
		}
		fmt.Fprintf(&resp, `{"orderId":%q,"compId":"s-1"}`, o.ID)
	}
	resp.WriteString("]}")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, resp.String())
}

func TestRunCountsWhatTheServerRecorded(t *testing.T) {
	fake := newFakeService(7)
	srv := httptest.NewServer(fake)
	defer srv.Close()

	rep := runLoadJSON(t, context.Background(), "-url", srv.URL, "-pool", "p", "-concurrency", "4",
		"-batch", "10", "-warmup", "200ms", "-duration", "1s", "-idempotency")

	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.requests == 0 {
		t.Fatal("the fake got no request")
	}
	if got, want := rep.Total.SentBatches, int64(fake.requests); got != want {
		t.Errorf("sent batches: got %d, want %d (the requests the server got)", got, want)
	}
	if got, want := rep.Total.Batches, int64(fake.requests-fake.failures); got != want {
		t.Errorf("batches ok: got %d, want %d", got, want)
	}
	if got, want := rep.Total.Orders, int64(fake.orders); got != want {
		t.Errorf("orders ok: got %d, want %d (the orders the server recorded)", got, want)
	}
	if got, want := rep.Total.SentOrders, int64(10*fake.requests); got != want {
		t.Errorf("sent orders: got %d, want %d", got, want)
	}
	if len(fake.ids) != fake.orders || fake.duplicates != 0 {
		t.Errorf("got %d distinct ids for %d orders and %d duplicate ids or keys, want none repeated",
			len(fake.ids), fake.orders, fake.duplicates)
	}
	if fake.noKey != 0 {
		t.Errorf("%d batches came without an Idempotency-Key, want none", fake.noKey)
	}
	for id := range fake.ids {
		if !idPattern.MatchString(id) || !strings.HasPrefix(id, rep.IDPrefix) {
			t.Fatalf("order id %q: want the API's pattern and the prefix %q", id, rep.IDPrefix)
		}
	}
	wantErrs := map[string]int64{"503": int64(fake.failures)}
	if fake.failures == 0 {
		t.Fatal("the fake answered no 503; the test needs a longer run")
	}
	if fmt.Sprint(rep.Total.Errors) != fmt.Sprint(wantErrs) {
		t.Errorf("errors: got %v, want %v", rep.Total.Errors, wantErrs)
	}
	if rep.Window.Orders > rep.Total.Orders || rep.Window.Orders == 0 {
		t.Errorf("window orders: got %d, want 1 to %d", rep.Window.Orders, rep.Total.Orders)
	}
	if rep.Latency.Samples != uint64(rep.Window.Batches) {
		t.Errorf("latency samples: got %d, want %d (the window's batches)", rep.Latency.Samples, rep.Window.Batches)
	}
	if !(rep.Latency.P50 <= rep.Latency.P90 && rep.Latency.P90 <= rep.Latency.P99 && rep.Latency.P99 <= rep.Latency.Max) {
		t.Errorf("latency: got %+v, want p50 ≤ p90 ≤ p99 ≤ max", rep.Latency)
	}
	if rep.OrdersPerSec <= 0 || rep.BatchesPerSec <= 0 {
		t.Errorf("rates: got %v orders/s and %v batches/s, want both above zero", rep.OrdersPerSec, rep.BatchesPerSec)
	}
}

func TestRunRoundRobinsOverTargets(t *testing.T) {
	fakes := []*fakeService{newFakeService(0), newFakeService(0)}
	var urls []string
	for _, f := range fakes {
		srv := httptest.NewServer(f)
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	rep := runLoadJSON(t, context.Background(), "-url", strings.Join(urls, ","), "-concurrency", "2",
		"-batch", "3", "-duration", "300ms")

	total := 0
	for i, f := range fakes {
		f.mu.Lock()
		if f.requests == 0 {
			t.Errorf("target %d got no request", i)
		}
		total += f.orders
		f.mu.Unlock()
	}
	if rep.Total.Orders != int64(total) {
		t.Errorf("orders: got %d, want %d (recorded by both targets)", rep.Total.Orders, total)
	}
}

func TestRunStopsWhenInterrupted(t *testing.T) {
	srv := httptest.NewServer(newFakeService(0))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	rep := runLoadJSON(t, ctx, "-url", srv.URL, "-concurrency", "2", "-duration", "1h")
	if !rep.Interrupted {
		t.Errorf("interrupted: got false, want true")
	}
	if rep.Total.Batches == 0 {
		t.Errorf("got no batch before the interruption")
	}
}

func TestRunFailsWhenNothingSucceeds(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now

	out, err := runTool(t, context.Background(), "run", "-json", "-progress=false", "-url", url,
		"-concurrency", "2", "-duration", "200ms")
	if err == nil {
		t.Fatal("got no error, want one: no batch can succeed")
	}
	var rep loadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if rep.Total.Errors["transport"] == 0 {
		t.Errorf("errors: got %v, want transport errors", rep.Total.Errors)
	}
	if !strings.Contains(rep.FirstFailure, "connection refused") {
		t.Errorf("firstFailure: got %q, want the cause, connection refused", rep.FirstFailure)
	}
}

func TestTextReport(t *testing.T) {
	srv := httptest.NewServer(newFakeService(3))
	defer srv.Close()
	out, err := runTool(t, context.Background(), "run", "-progress=false", "-url", srv.URL,
		"-concurrency", "2", "-batch", "2", "-duration", "200ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orders/s", "batches/s", "p50", "p90", "p99", "max", "total sent", "503: "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want error // nil: any error
	}{
		{nil, errUsage},
		{[]string{"fly"}, errUsage},
		{[]string{"help"}, flag.ErrHelp},
		{[]string{"run", "-h"}, flag.ErrHelp},
		{[]string{"run", "-no-such-flag"}, errUsage},
		{[]string{"run", "-batch", "0"}, nil},
		{[]string{"run", "-duration", "0s"}, nil},
		{[]string{"run", "-ids", "sequential"}, nil},
		{[]string{"run", "-url", "ftp://127.0.0.1:1"}, nil},
		{[]string{"run", "-url", ""}, nil},
		{[]string{"run", "-url", "http://user:secret@127.0.0.1:1"}, nil},
		{[]string{"run", "-pool", "no spaces"}, nil},
		{[]string{"run", "-concurrency", "0"}, nil},
		{[]string{"run", "extra"}, nil},
		{[]string{"scales", "-n", "0"}, nil},
		{[]string{"scales", "-prefix", "-bad"}, nil},
		{[]string{"scales", "-max-count", "-1"}, nil},
		{[]string{"noop", "-for", "-1s"}, nil},
	}
	for _, tt := range tests {
		err := run(context.Background(), tt.args, noEnv, io.Discard, io.Discard)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%q: got error %v, want %v", tt.args, err, cmp(tt.want))
		}
	}
}

func cmp(err error) string {
	if err == nil {
		return "an error"
	}
	return err.Error()
}

func TestTokenFromEnvironment(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	getenv := func(k string) string {
		if k == tokenEnv {
			return "s3cret"
		}
		return ""
	}
	err := run(context.Background(), []string{"scales", "-url", srv.URL, "-n", "1", "-concurrency", "1", "-progress=false"},
		getenv, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), []string{"scales", "-url", srv.URL, "-n", "1", "-concurrency", "1", "-progress=false",
		"-token", "flag"}, getenv, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Bearer s3cret", "Bearer s3cret", "Bearer flag", "Bearer flag"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Authorization of the pool and the Scale, from the environment then -token: got %q, want %q", got, want)
	}

	var help bytes.Buffer
	if err := run(context.Background(), []string{"run", "-h"}, getenv, io.Discard, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h: got %v, want flag.ErrHelp", err)
	}
	if strings.Contains(help.String(), "s3cret") {
		t.Errorf("-h printed the token:\n%s", help.String())
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		status int
		err    error
		want   string
	}{
		{503, nil, "503"},
		{409, nil, "409"},
		{0, context.Canceled, "canceled"},
		{0, fmt.Errorf("post: %w", context.DeadlineExceeded), "timeout"},
		{0, errors.New("connection refused"), "transport"},
	}
	for _, tt := range tests {
		if got := outcome(tt.status, tt.err); got != tt.want {
			t.Errorf("outcome(%d, %v): got %q, want %q", tt.status, tt.err, got, tt.want)
		}
	}
}

// TestFailureKind: an answer is named by its status and its problem type,
// so that 503 unavailable (nothing applied) and 503 outcome-unknown (maybe
// applied) are counted apart.
func TestFailureKind(t *testing.T) {
	for _, tt := range []struct {
		status int
		err    error
		body   string
		want   string
	}{
		{503, nil, `{"type":"urn:dispatcher:problem:outcome-unknown","title":"Outcome unknown","status":503}`, "503 outcome-unknown"},
		{503, nil, `{"type":"urn:dispatcher:problem:unavailable","status":503}`, "503 unavailable"},
		{404, nil, `{"title":"x","type":"https://example.com/probs/no-pool"}`, "404 no-pool"},
		{502, nil, `<html>bad gateway</html>`, "502"},
		{500, nil, `{"type":"urn:x:Not A Slug"}`, "500"},
		{0, errors.New("connection refused"), `{"type":"urn:x:y"}`, "transport"},
	} {
		if got := failureKind(tt.status, tt.err, []byte(tt.body)); got != tt.want {
			t.Errorf("failureKind(%d, %v, %s): got %q, want %q", tt.status, tt.err, tt.body, got, tt.want)
		}
	}
}
