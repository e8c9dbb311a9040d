package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// newService serves the real API on the memory store.
func newService(t testing.TB) (*dispatch.Service, string) {
	t.Helper()
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	srv := httptest.NewServer(api.New(svc, api.Options{}))
	t.Cleanup(srv.Close)
	return svc, srv.URL
}

// registerScales runs the scales mode and checks that all n were created.
func registerScales(t testing.TB, url, pool string, n int) {
	t.Helper()
	out, err := runTool(t, context.Background(), "scales", "-json", "-progress=false", "-url", url,
		"-pool", pool, "-n", strconv.Itoa(n), "-max-count", "5", "-concurrency", "4")
	if err != nil {
		t.Fatalf("scales: %v", err)
	}
	var rep scalesReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("scales report is not JSON: %v\n%s", err, out)
	}
	if rep.Created != int64(n) || len(rep.Errors) != 0 {
		t.Fatalf("scales: got %d created and errors %v, want %d and none", rep.Created, rep.Errors, n)
	}
}

// scaleLoads lists the pool's Scales and sums their outstanding orders and
// their base loads.
func scaleLoads(t testing.TB, svc *dispatch.Service, pool string) (scales int, outstanding, base int64) {
	t.Helper()
	list, next, err := svc.ListScales(context.Background(), pool, dispatch.Page{Limit: 10000})
	if err != nil || next != "" {
		t.Fatalf("ListScales: %v (next %q)", err, next)
	}
	for _, s := range list {
		outstanding += s.Outstanding
		base += s.BaseLoad
	}
	return len(list), outstanding, base
}

func TestScalesRegistersThePool(t *testing.T) {
	svc, url := newService(t)
	registerScales(t, url, "p", 30)

	n, outstanding, base := scaleLoads(t, svc, "p")
	if n != 30 || outstanding != 0 {
		t.Errorf("got %d Scales with %d outstanding orders, want 30 with none", n, outstanding)
	}
	if base == 0 {
		t.Errorf("base loads sum to 0, want random initial orderCounts from -max-count")
	}
	if _, err := svc.GetScale(context.Background(), "p", "s-000030"); err != nil {
		t.Errorf("GetScale s-000030: %v", err)
	}
}

func TestRunAgainstTheService(t *testing.T) {
	svc, url := newService(t)
	registerScales(t, url, "p", 20)

	rep := runLoadJSON(t, context.Background(), "-url", url, "-pool", "p", "-concurrency", "4",
		"-batch", "7", "-warmup", "100ms", "-duration", "1s", "-idempotency")

	if len(rep.Total.Errors) != 0 {
		t.Errorf("errors: got %v, want none (409 would be a repeated order id)", rep.Total.Errors)
	}
	if rep.Total.Orders == 0 || rep.Total.Orders != rep.Total.SentOrders {
		t.Fatalf("orders: got %d ok of %d sent, want all of at least one", rep.Total.Orders, rep.Total.SentOrders)
	}
	_, outstanding, _ := scaleLoads(t, svc, "p")
	if outstanding != rep.Total.Orders {
		t.Errorf("outstanding orders in the service: got %d, want %d (the orders the tool counted)", outstanding, rep.Total.Orders)
	}
	// The ids are the prefix and 1…N, each recorded once: N lookups that
	// succeed and N outstanding orders leave no room for a duplicate.
	for i := int64(1); i <= rep.Total.Orders; i++ {
		id := rep.IDPrefix + strconv.FormatInt(i, 10)
		if _, err := svc.GetOrder(context.Background(), "p", id); err != nil {
			t.Fatalf("GetOrder %s: %v", id, err)
		}
	}
}

func TestRunCompletesWhatItDispatches(t *testing.T) {
	for _, ids := range []string{"random", "none"} {
		t.Run("ids="+ids, func(t *testing.T) {
			svc, url := newService(t)
			registerScales(t, url, "p", 10)

			rep := runLoadJSON(t, context.Background(), "-url", url, "-pool", "p", "-concurrency", "3",
				"-batch", "5", "-duration", "500ms", "-ids", ids, "-complete")

			if len(rep.Total.Errors) != 0 || len(rep.CompletionErrors) != 0 {
				t.Errorf("errors: got %v and completion errors %v, want none", rep.Total.Errors, rep.CompletionErrors)
			}
			if rep.Total.Orders == 0 || rep.Completed != rep.Total.Orders {
				t.Errorf("completed: got %d, want %d (every order dispatched)", rep.Completed, rep.Total.Orders)
			}
			if _, outstanding, _ := scaleLoads(t, svc, "p"); outstanding != 0 {
				t.Errorf("outstanding orders: got %d, want 0", outstanding)
			}
		})
	}
}

func TestRunAgainstAMissingPool(t *testing.T) {
	_, url := newService(t)
	out, err := runTool(t, context.Background(), "run", "-json", "-progress=false", "-url", url,
		"-pool", "nowhere", "-concurrency", "2", "-duration", "200ms")
	if err == nil {
		t.Fatal("got no error, want one: the pool does not exist")
	}
	var rep loadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if rep.Total.Errors["404 pool-not-found"] != rep.Total.SentBatches || rep.Total.SentBatches == 0 {
		t.Errorf("errors: got %v of %d batches, want all 404 pool-not-found", rep.Total.Errors, rep.Total.SentBatches)
	}
}
