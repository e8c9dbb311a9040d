package redis

import (
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// TestDispatchArgsLen: Dispatch and DispatchMany size their argument
// lists by dispatchArgsLen, which must count what dispatchArgs appends:
// the ids as one run, and the keys as a second run only when an order
// has one.
func TestDispatchArgsLen(t *testing.T) {
	s := &Store{}
	fixed := len(fnDispatch.args) - 1
	for _, n := range []int{1, 2, 100} {
		for _, withKey := range []bool{false, true} {
			req := dispatch.DispatchRequest{Pool: "p", BatchID: "b", Orders: make([]dispatch.OrderInput, n), Now: time.UnixMilli(1)}
			for i := range req.Orders {
				req.Orders[i].ID = "o-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
			}
			req.Orders[n-1] = dispatch.OrderInput{ID: "o-last"}
			want := fixed + n
			if withKey {
				req.Orders[n-1].Key = "k-last"
				want += n
			}
			args, err := s.dispatchArgs(nil, req, time.Second, withKey)
			if err != nil {
				t.Fatal(err)
			}
			if len(args) != dispatchArgsLen(req) || len(args) != want {
				t.Errorf("%d orders, key %v: dispatchArgs appends %d arguments, dispatchArgsLen says %d, want %d",
					n, withKey, len(args), dispatchArgsLen(req), want)
				continue
			}
			// The orders' ids and keys go as pointers to the request's strings.
			if id := args[fixed+n-1].(*string); *id != "o-last" {
				t.Errorf("%d orders, key %v: the last id is %q", n, withKey, *id)
			}
			if key := args[len(args)-1].(*string); withKey && *key != "k-last" {
				t.Errorf("%d orders: the last key is %q", n, *key)
			}
			set := args[2].(string)
			if got := strings.HasSuffix(set, "|1"); got != withKey {
				t.Errorf("%d orders, key %v: settings %q", n, withKey, set)
			}
		}
	}
}

// TestSettingsArg: the settings argument is the same string call after
// call (the floor goes up to whole seconds), and names the first repeated
// order id after them, unless the Service has checked the ids.
func TestSettingsArg(t *testing.T) {
	s := &Store{retention: time.Hour}
	req := dispatch.DispatchRequest{Orders: []dispatch.OrderInput{{ID: "a"}, {ID: "b"}}, IdempotencyTTL: time.Minute, MaxCost: 7}
	for _, floor := range []time.Duration{34001 * time.Millisecond, 34999 * time.Millisecond, 35 * time.Second} {
		if got := s.settingsArg(req, floor, false); got != "3600000|60000|7|35000|0|0" {
			t.Errorf("floor %v: settings %q", floor, got)
		}
	}
	req.DryRun = true
	if got := s.settingsArg(req, time.Second, true); got != "3600000|60000|7|1000|1|1" {
		t.Errorf("dry run with keys: settings %q", got)
	}
	req.DryRun = false
	// The Store keeps the last argument: each call below differs from the
	// one before it in one thing only.
	for _, c := range []struct {
		change func()
		floor  time.Duration
		keyed  bool
		want   string
	}{
		{func() {}, time.Second, true, "3600000|60000|7|1000|0|1"},
		{func() {}, time.Second, false, "3600000|60000|7|1000|0|0"},
		{func() { req.DryRun = true }, time.Second, false, "3600000|60000|7|1000|1|0"},
		{func() { req.DryRun = false }, time.Second, false, "3600000|60000|7|1000|0|0"},
		{func() {}, 2 * time.Second, false, "3600000|60000|7|2000|0|0"},
		{func() { req.MaxCost = 8 }, 2 * time.Second, false, "3600000|60000|8|2000|0|0"},
		{func() { req.IdempotencyTTL = time.Second }, 2 * time.Second, false, "3600000|1000|8|2000|0|0"},
		{func() { s.retention = time.Minute }, 2 * time.Second, false, "60000|1000|8|2000|0|0"},
		{func() { s.retention, req.IdempotencyTTL, req.MaxCost = time.Hour, time.Minute, 7 }, time.Second, false, "3600000|60000|7|1000|0|0"},
	} {
		c.change()
		if got := s.settingsArg(req, c.floor, c.keyed); got != c.want {
			t.Errorf("settings %q, want %q", got, c.want)
		}
	}
	for _, n := range []int{3, 40} { // with and without RepeatedOrder's map
		req.Orders = make([]dispatch.OrderInput, n)
		for i := range req.Orders {
			req.Orders[i].ID = strings.Repeat("o", i+1)
		}
		req.Orders[n-1].ID, req.Orders[n-2].ID = "o|x", "o"
		if got := s.settingsArg(req, time.Second, false); got != "3600000|60000|7|1000|0|0|o" {
			t.Errorf("%d orders, one repeated: settings %q", n, got)
		}
		// (the Service's requests are checked: UniqueIDs)
		req.UniqueIDs = true
		if got := s.settingsArg(req, time.Second, false); got != "3600000|60000|7|1000|0|0" {
			t.Errorf("%d orders marked UniqueIDs: settings %q", n, got)
		}
		req.UniqueIDs = false
	}
}
