package redis

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// TestAppendRand: the random numbers go as one run of randDigits hex
// digits each, two per order, zeros where req.Rand is short, and a number
// of 2^53 or more fails the call. Without req.Rand they come from
// req.RandSource; without draws, none is drawn and the argument is "".
func TestAppendRand(t *testing.T) {
	if randDigits%2 != 0 {
		t.Fatalf("randDigits %d: appendRand writes two digits a step", randDigits)
	}
	nums := []uint64{0, 1, 15, 16, 255, 256, 0xabcdef, 1<<52 + 12345, maxRand - 1}
	for n := 0; n <= 2*len(nums); n++ {
		req := dispatch.DispatchRequest{Orders: make([]dispatch.OrderInput, (n+1)/2), Rand: nums[:n/2]}
		args, err := appendRand([]any{"x"}, req, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(args) != 2 || args[0] != "x" {
			t.Fatalf("%d orders: args %v", len(req.Orders), args)
		}
		var want strings.Builder
		for i := range 2 * len(req.Orders) {
			var r uint64
			if i < len(req.Rand) {
				r = req.Rand[i]
			}
			fmt.Fprintf(&want, "%0*x", randDigits, r)
		}
		if got := string(args[1].([]byte)); got != want.String() {
			t.Errorf("%d orders, %d numbers: %q, want %q", len(req.Orders), len(req.Rand), got, want.String())
		}
		for i := 0; i+randDigits <= want.Len(); i += randDigits {
			if v, err := strconv.ParseUint(want.String()[i:i+randDigits], 16, 64); err != nil || (i/randDigits < len(req.Rand) && v != req.Rand[i/randDigits]) {
				t.Errorf("number %d reads back as %d (%v)", i/randDigits, v, err)
			}
		}
	}
	for _, r := range []uint64{maxRand, 1<<64 - 1} {
		req := dispatch.DispatchRequest{Orders: make([]dispatch.OrderInput, 2), Rand: []uint64{1, 2, r, 3}}
		if _, err := appendRand(nil, req, true); err == nil {
			t.Errorf("%d: no error", r)
		}
	}
	drawn := 0
	src := func() uint64 { drawn++; return uint64(drawn) }
	req := dispatch.DispatchRequest{Orders: make([]dispatch.OrderInput, 2), RandSource: src}
	args, err := appendRand(nil, req, false)
	if err != nil || len(args) != 1 || args[0] != "" || drawn != 0 {
		t.Errorf("without draws: args %q, %v, %d numbers drawn; want one empty argument, none drawn", args, err, drawn)
	}
	args, err = appendRand(nil, req, true)
	want := fmt.Sprintf("%0*x%0*x%0*x%0*x", randDigits, 1, randDigits, 2, randDigits, 3, randDigits, 4)
	if err != nil || len(args) != 1 || string(args[0].([]byte)) != want {
		t.Errorf("from RandSource: args %q, %v; want %q", args, err, want)
	}
}

// BenchmarkCallPath is the Go side of a dispatch of 100 orders through
// the Redis store, without Redis: its arguments (dispatchArgs) and the
// reading of a reply of the form lua/dispatch.lua answers (decodeDispatch),
// for a request as the Service makes it (RandSource, no Rand). waterfill
// is a pool whose strategy draws no random numbers, as the store believes
// (none made, none sent); draws one whose strategy does (200 numbers
// drawn and encoded).
func BenchmarkCallPath(b *testing.B) {
	const n = 100
	s := &Store{retention: time.Hour}
	var next uint64
	req := dispatch.DispatchRequest{Pool: "p", BatchID: "b-1", Now: time.UnixMilli(1_700_000_000_000),
		Orders: make([]dispatch.OrderInput, n), UniqueIDs: true,
		RandSource: func() uint64 { next += 1 << 40; return next & (maxRand - 1) }}
	var rec strings.Builder
	rec.WriteString("1700000000000|1700003600000|waterfill|")
	for i := range req.Orders {
		req.Orders[i].ID = fmt.Sprintf("0190a-%d", 100000+i)
		if i > 0 {
			rec.WriteByte(',')
		}
		fmt.Fprintf(&rec, "%s,scale-%02d", req.Orders[i].ID, i%16)
	}
	reply := rec.String()
	for _, draws := range []bool{false, true} {
		name := "waterfill"
		if draws {
			name = "draws"
		}
		b.Run(name, func(b *testing.B) {
			args := make([]any, 0, dispatchArgsLen(req))
			b.ReportAllocs()
			for b.Loop() {
				a, err := s.dispatchArgs(args[:0], req, time.Second, draws)
				if err != nil || len(a) != cap(args) {
					b.Fatal(err)
				}
				bt, _, err := decodeDispatch(req, reply)
				if err != nil || len(bt.Assignments) != n {
					b.Fatal(err)
				}
			}
		})
	}
}
