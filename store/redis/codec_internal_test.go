package redis

import (
	"reflect"
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
)

// TestDecodeBatchOf: reading a dispatch's reply with the request's orders
// at hand gives what decodeBatch gives, whether the record names those
// orders in their order or not, and dispatch.lua's reply in two
// ({head, pairs}) reads as the record.
func TestDecodeBatchOf(t *testing.T) {
	orders := func(ids ...string) []dispatch.OrderInput {
		o := make([]dispatch.OrderInput, len(ids))
		for i, id := range ids {
			o[i].ID = id
		}
		return o
	}
	head := "1700000000000|1700003600000|waterfill|"
	recs := []string{
		head + "a,s1",
		head + "a,s1,b,s2,c,s1",
		head + "o-1,s-10,o-10,s-1",
		head + "a,,b,s2",
		head + "a,s1,b",
		head + "a,s1,",
		head + "",
		"1700000000000|x|random|a,s1",
		"x|1|random|a,s1",
		"1700000000000|1|a,s1",
	}
	reqs := [][]dispatch.OrderInput{
		nil, orders("a"), orders("b"), orders("a", "b"), orders("a", "b", "c"), orders("a", "c", "b"),
		orders("a", "b", "c", "d"), orders("o-1", "o-10"), orders("o-10", "o-1"), orders("o", "o-10"),
		orders("o-1,s-10", "o-10"), orders("a,s1"), orders("a,s1,b", "s2"), orders(""),
	}
	for _, rec := range recs {
		want, werr := decodeBatch("p", "b-1", rec)
		for _, req := range reqs {
			head, pairs := splitRecord(rec)
			got, err := decodeBatchOf("p", "b-1", head, pairs, req)
			if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
				t.Errorf("record %q, orders %v: %+v, %v; decodeBatch %+v, %v", rec, req, got, err, want, werr)
			}
			// dispatch.lua's reply, as one string or in two
			dr := dispatch.DispatchRequest{Pool: "p", BatchID: "b-1", Orders: req}
			for _, reply := range []any{rec, []any{head, pairs}} {
				if _, two := reply.([]any); two && head == "" {
					continue
				}
				got, replayed, err := decodeDispatch(dr, reply)
				if (err == nil) != (werr == nil) || replayed || !reflect.DeepEqual(got, want) {
					t.Errorf("reply %q, orders %v: %+v, %v, %v; decodeBatch %+v, %v", reply, req, got, replayed, err, want, werr)
				}
			}
		}
	}
}
