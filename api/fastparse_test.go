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
