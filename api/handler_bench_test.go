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
)

// BenchmarkBatchHandler sends single-order batches through the whole
// handler of New (routing, middleware, access log, parsing, the Service,
// the answer) over the memory store with 1,000 Scales, without a network:
// the CPU a request costs in Go before any socket or Redis round trip,
// with the access log on (info) and off (warn).
func BenchmarkBatchHandler(b *testing.B) {
	for _, logOn := range []bool{true, false} {
		b.Run(fmt.Sprintf("accessLog=%v", logOn), func(b *testing.B) {
			svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
			ctx := context.Background()
			if _, _, err := svc.PutPool(ctx, "p", dispatch.PoolSpec{}); err != nil {
				b.Fatal(err)
			}
			for i := range 1000 {
				if _, _, err := svc.PutScale(ctx, "p", fmt.Sprintf("s-%04d", i), dispatch.ScaleSpec{}); err != nil {
					b.Fatal(err)
				}
			}
			lvl := slog.LevelInfo
			if !logOn {
				lvl = slog.LevelWarn
			}
			log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: lvl}))
			h := api.New(svc, api.Options{Logger: log, Metrics: api.NewMetrics(api.NewRegistry(), 100)})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				body := fmt.Appendf(nil, `{"orders":[{"id":"o-%d"}]}`, i)
				r := httptest.NewRequest("POST", "/v1/pools/p/batches", bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
