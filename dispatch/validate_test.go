package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
)

// TestValidIDMatchesPattern checks the hand-written ValidID against
// IDPattern on every byte in every position, and at the length limits.
func TestValidIDMatchesPattern(t *testing.T) {
	var cases []string
	for b := range 256 {
		c := string(rune(b))
		if b >= 0x80 {
			c = string([]byte{byte(b)})
		}
		cases = append(cases, c, "a"+c, c+"a", "a"+c+"b")
	}
	cases = append(cases, "", "é", strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129),
		"order-1", "a.b_c:d-e", "-a", "a\n", "Z9")
	for _, id := range cases {
		if got, want := dispatch.ValidID(id), dispatch.IDPattern.MatchString(id); got != want {
			t.Errorf("ValidID(%q) = %v, IDPattern says %v", id, got, want)
		}
	}
}

// FuzzValidID compares ValidID with IDPattern on any input.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"a", "a-b", "-", "a\x00", strings.Repeat("x", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := dispatch.ValidID(id), dispatch.IDPattern.MatchString(id); got != want {
			t.Errorf("ValidID(%q) = %v, IDPattern says %v", id, got, want)
		}
	})
}

// BenchmarkValidID compares ValidID with the regexp on a typical order id.
func BenchmarkValidID(b *testing.B) {
	const id = "01a22ccb-b509-7440-a525-6f45a784b898"
	b.Run("ValidID", func(b *testing.B) {
		for b.Loop() {
			dispatch.ValidID(id)
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			dispatch.IDPattern.MatchString(id)
		}
	})
}

// TestRepeatedOrderIDs: an id repeated anywhere in a batch is refused,
// below and above the size where prepare keeps the ids in a map, up to
// the largest batch.
func TestRepeatedOrderIDs(t *testing.T) {
	svc := dispatch.NewService(memory.New(memory.Options{}), dispatch.Config{})
	for _, n := range []int{2, 16, 17, 100, dispatch.DefaultMaxBatch} {
		for _, at := range []int{0, (n - 1) / 2, n - 2} {
			orders := make([]dispatch.OrderInput, n)
			for i := range orders {
				orders[i].ID = fmt.Sprintf("o-%d", i)
			}
			_, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: orders})
			if errors.Is(err, dispatch.ErrDuplicateOrder) || !errors.Is(err, dispatch.ErrPoolNotFound) {
				t.Fatalf("%d distinct orders: %v, want ErrPoolNotFound", n, err)
			}
			orders[n-1].ID = orders[at].ID
			if _, _, err := svc.Dispatch(context.Background(), dispatch.DispatchInput{Pool: "p", Orders: orders}); !errors.Is(err, dispatch.ErrDuplicateOrder) {
				t.Errorf("%d orders, the last repeating order %d: %v, want ErrDuplicateOrder", n, at, err)
			}
		}
	}
}
