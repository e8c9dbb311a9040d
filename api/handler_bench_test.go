package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dispatcher/dispatcher/api"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// BenchmarkBatchHandler sends single-order batches through the whole
// handler of New (routing, middleware, access log, parsing, the Service,
// the answer) over the memory store with 1,000 Scales, without a network:
// the CPU a request costs in Go before any socket or Redis round trip,
// with the access log on (info) and off (warn).
func BenchmarkBatchHandler(b *testing.B) {
	for _, logOn := range []bool{true, false} {
		b.Run(fmt.Sprintf("accessLog=%v", logOn), func(b *testing.B) {
			svc := benchService(b, 1000, "p")
			lvl := slog.LevelInfo
			if !logOn {
				lvl = slog.LevelWarn
			}
			h := benchHandler(svc, api.Options{}, lvl)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				body := fmt.Appendf(nil, `{"orders":[{"id":"o-%d"}]}`, i)
				r := httptest.NewRequest("POST", "/v1/pools/p/batches", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				benchServe(b, h, r, http.StatusCreated)
			}
		})
	}
}

// benchService is a Service over a memory store holding pools, each with
// Scales s-0000, s-0001, … up to scales.
func benchService(b *testing.B, scales int, pools ...string) *dispatch.Service {
	b.Helper()
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	ctx := context.Background()
	for _, p := range pools {
		if _, _, err := svc.PutPool(ctx, p, dispatch.PoolSpec{}); err != nil {
			b.Fatal(err)
		}
		for i := range scales {
			if _, _, err := svc.PutScale(ctx, p, fmt.Sprintf("s-%04d", i), dispatch.ScaleSpec{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return svc
}

// benchHandler is the handler of New over svc with opts, logging at lvl
// to nowhere, with metrics.
func benchHandler(svc *dispatch.Service, opts api.Options, lvl slog.Level) http.Handler {
	opts.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: lvl}))
	opts.Metrics = api.NewMetrics(api.NewRegistry(), 100)
	return api.New(svc, opts)
}

// benchServe sends r to h and fails b unless the answer has status want.
func benchServe(b *testing.B, h http.Handler, r *http.Request, want int) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != want {
		b.Fatal(w.Code, w.Body.String())
	}
}

// BenchmarkBatchAPI sends batches of 1 and 100 orders through the whole
// handler of New, access log and metrics on, over a store that answers at
// once (storetest.Instant): the replica's own Go work per request besides
// the store's client, without a network.
func BenchmarkBatchAPI(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			svc := dispatch.NewService(storetest.Instant{}, dispatch.Config{})
			h := benchHandler(svc, api.Options{}, slog.LevelInfo)
			var body []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				body = append(body[:0], `{"orders":[`...)
				for j := range n {
					if j > 0 {
						body = append(body, ',')
					}
					body = fmt.Appendf(body, `{"id":"o-%d-%d"}`, i, j)
				}
				body = append(body, "]}"...)
				r := httptest.NewRequest("POST", "/v1/pools/p/batches", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				benchServe(b, h, r, http.StatusCreated)
			}
		})
	}
}
