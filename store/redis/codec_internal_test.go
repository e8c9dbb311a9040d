package redis

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
)

// TestDecodeBatchOf: reading a dispatch's reply with the request's orders
// at hand gives what decodeBatch gives, whether the record names those
// orders in their order or not, and dispatch.lua's reply in two
// ({head, Scales}, layout 9) reads as the record with the orders' ids.
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
		head + "s1,s2,s1,|a,b,c",
		head + "s1,|a",
		head + "s1,s2,|a",
		head + "s1,|a,b",
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
			// dispatch.lua's reply as one string
			dr := dispatch.DispatchRequest{Pool: "p", BatchID: "b-1", Orders: req}
			got, replayed, err := decodeDispatch(dr, rec)
			if (err == nil) != (werr == nil) || replayed || !reflect.DeepEqual(got, want) {
				t.Errorf("reply %q, orders %v: %+v, %v, %v; decodeBatch %+v, %v", rec, req, got, replayed, err, want, werr)
			}
			// … or in two, {head, "compId,…"} and a named batch's
			// {head, "compId,…,|orderId,…"} (layout 9), which read
			// as the record when they name req's orders, and fail
			// when their Scales are not as many as req's orders
			if werr != nil || head == "" {
				continue
			}
			var ids, comps []string
			for _, a := range want.Assignments {
				ids, comps = append(ids, a.OrderID), append(comps, a.CompID)
			}
			cs := strings.Join(comps, ",")
			for _, two := range []string{cs, cs + ",|" + strings.Join(ids, ",")} {
				got, replayed, err := decodeDispatch(dr, []any{head, two})
				var names []string
				for _, o := range req {
					names = append(names, o.ID)
				}
				switch {
				case len(req) != len(comps):
					if err == nil {
						t.Errorf("reply {%q, %q}, orders %v: %+v, want an error", head, two, req, got)
					}
				case strings.Join(names, ",") == strings.Join(ids, ","):
					if err != nil || replayed || !reflect.DeepEqual(got, want) {
						t.Errorf("reply {%q, %q}, orders %v: %+v, %v, %v; want %+v", head, two, req, got, replayed, err, want)
					}
				}
			}
		}
	}
}
