package api

import (
	"bytes"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/dispatcher/dispatcher/dispatch"
)

// orderParsers are fastjson parsers for fastOrders, reused across requests.
var orderParsers fastjson.ParserPool

// fastOrders reads a batch body in one pass when it is the plain shape
// {"orders": [{"id": "…", "key": "…"}, …]}: each member at most once, ids
// and keys non-empty strings without escapes or control characters, the
// body UTF-8. It reports
// false for anything else (a syntax error, a member given twice, an unknown
// member, a wrong type, an empty id or key, trailing data, an empty body),
// and the caller parses the body again with strictOrders, which finds the
// problem and names it. Where it reports true, the orders are what
// strictOrders returns (FuzzFastOrders checks this).
//
// strictOrders takes a body apart in several passes of jsontext (the whole
// body, then each object into a map, then each member): many times the CPU
// of this one pass (BenchmarkParseOrders), and with encoding/json it was
// half the CPU a replica spent on a dispatch of 100 orders.
func fastOrders(body []byte) ([]dispatch.OrderInput, bool) {
	// Escapes and a body that is not UTF-8 are left to strictOrders,
	// which refuses half a surrogate pair (fastjson keeps its text) and
	// bytes that are not UTF-8.
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return nil, false
	}
	p := orderParsers.Get()
	defer orderParsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, false
	}
	root, err := v.Object()
	if err != nil || root.Len() != 1 {
		return nil, false
	}
	list := root.Get("orders")
	if list == nil {
		return nil, false
	}
	elems, err := list.Array()
	if err != nil {
		return nil, false
	}
	orders := make([]dispatch.OrderInput, len(elems))
	for i, e := range elems {
		o, err := e.Object()
		if err != nil {
			return nil, false
		}
		ok := true
		o.Visit(func(name []byte, v *fastjson.Value) {
			s, isStr := plain(v)
			switch {
			case !isStr:
				ok = false
			case string(name) == "id" && orders[i].ID == "":
				orders[i].ID = s
			case string(name) == "key" && orders[i].Key == "":
				orders[i].Key = s
			default: // unknown, or given twice
				ok = false
			}
		})
		if !ok {
			return nil, false
		}
	}
	return orders, true
}

// plain returns v's text when v is a non-empty string without control
// characters: in a UTF-8 body without escapes, every JSON decoder reads
// it alike.
func plain(v *fastjson.Value) (string, bool) {
	if v.Type() != fastjson.TypeString {
		return "", false
	}
	b := v.GetStringBytes()
	if len(b) == 0 {
		return "", false
	}
	for _, c := range b {
		if c < 0x20 {
			return "", false
		}
	}
	return string(b), true
}
