package api_test

import (
	"reflect"
	"testing"

	"github.com/dispatcher/dispatcher/api"
)

// FuzzFastOrders checks fastOrders against strictOrders: a body that the
// one-pass parser takes is one the strict parser takes too, with the same
// orders.
func FuzzFastOrders(f *testing.F) {
	for _, b := range []string{
		`{"orders":[{"id":"o-1","key":"cust-9"},{"id":"o-2"},{}]}`,
		`{"orders": [ {"key": "k", "id": "\u0061"} ] }`,
		`{"orders":[]}`, `{}`, ``, ` `, `{"orders":null}`, `{"orders":[{"id":""}]}`,
		`{"orders":[{"id":"a","id":"b"}]}`, `{"orders":[],"orders":[]}`, `{"orders":[{"id":5}]}`,
		`{"orders":[{"id":"o-1"}]} {}`, `{"orders":[{"id":"o-1"},]}`, `{"orders":[{"id":"a\ud800"}]}`,
		"{\"orders\":[{\"id\":\"\xff\"}]}", `{"Orders":[]}`, `{"orders":[{"x":"1"}]}`,
		`{"orders":[{"id":"o-1","key":"客户-9"}]}`, "{\"orders\":[{\"id\":\"o-1\",\"key\":\"a\x7f\"}]}",
		"{\"orders\":[{\"id\":\"o-1\",\"key\":\"a\tb\"}]}", "{\"orders\":[{\"id\":\"o-1\",\"key\":\"ab\xc3\"}]}",
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := api.FastOrders(body)
		if !ok {
			return
		}
		strict, err := api.StrictOrders(body)
		if err != nil {
			t.Fatalf("fastOrders takes %q, strictOrders refuses it: %v", body, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%q: fastOrders %+v, strictOrders %+v", body, fast, strict)
		}
	})
}

// TestFastOrdersTakesUTF8Keys: keys beyond ASCII, as sent, take the fast
// path; a body that is not UTF-8 does not.
func TestFastOrdersTakesUTF8Keys(t *testing.T) {
	orders, ok := api.FastOrders([]byte(`{"orders":[{"id":"o-1","key":"客户-9 ü"}]}`))
	if !ok || len(orders) != 1 || orders[0].Key != "客户-9 ü" {
		t.Errorf("got %+v, %v; want the key 客户-9 ü on the fast path", orders, ok)
	}
	if _, ok := api.FastOrders([]byte("{\"orders\":[{\"id\":\"o-1\",\"key\":\"ab\xc3\"}]}")); ok {
		t.Error("fastOrders took a body that is not UTF-8")
	}
}
