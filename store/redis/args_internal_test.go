package redis

import (
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// TestDispatchArgsLen: Dispatch and DispatchMany size their argument
// lists by dispatchArgsLen, which must count what dispatchArgs appends.
func TestDispatchArgsLen(t *testing.T) {
	s := &Store{}
	for _, n := range []int{1, 2, 100} {
		req := dispatch.DispatchRequest{Pool: "p", BatchID: "b", Orders: make([]dispatch.OrderInput, n), Now: time.UnixMilli(1)}
		args, err := s.dispatchArgs(nil, req, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(args) != dispatchArgsLen(req) {
			t.Errorf("%d orders: dispatchArgs appends %d arguments, dispatchArgsLen says %d", n, len(args), dispatchArgsLen(req))
		}
		// The orders' ids and keys go as pointers to the request's strings.
		req.Orders[n-1] = dispatch.OrderInput{ID: "o-last", Key: "k-last"}
		args, _ = s.dispatchArgs(nil, req, time.Second)
		if id, key := args[len(args)-2].(*string), args[len(args)-1].(*string); *id != "o-last" || *key != "k-last" {
			t.Errorf("%d orders: the last order's arguments are %q, %q", n, *id, *key)
		}
	}
}
