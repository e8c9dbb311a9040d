package api

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseOrders parses a batch body of 1 and of 100 orders with the
// one-pass parser (parseOrders' usual path) and with the strict one:
// compare ns/op of the two within one run.
func BenchmarkParseOrders(b *testing.B) {
	for _, n := range []int{1, 100} {
		var sb strings.Builder
		sb.WriteString(`{"orders":[`)
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"bench-0a1b2c-%d","key":"customer-%d"}`, i, i%97)
		}
		sb.WriteString(`]}`)
		body := []byte(sb.String())
		for _, p := range []struct {
			name  string
			parse func([]byte) error
		}{
			{"fast", func(b []byte) error { _, err := parseOrders(b); return err }},
			{"strict", func(b []byte) error { _, err := strictOrders(b); return err }},
		} {
			b.Run(fmt.Sprintf("orders=%d/%s", n, p.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := p.parse(body); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
