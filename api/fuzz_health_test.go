package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/dispatcher/dispatcher/dispatch"
)

// FuzzDecodeHeartbeat sends POST /v1/pools/{pool}/scales/{compId}/heartbeat
// with an arbitrary pool, compId, Content-Type and body. A request without
// violations answers 200 with the Scale: its lease renewed at the server's
// clock, the orderCount sent setting baseLoad to max(0, orderCount −
// outstanding), its state and every other Scale unchanged. Every refusal
// is one of the request's violations and changes nothing.
func FuzzDecodeHeartbeat(f *testing.F) {
	asJSON := uint8(0)
	f.Add("p", "S1", []byte(``), asJSON)
	f.Add("p", "S2", []byte(`{}`), asJSON)
	f.Add("p", "S3", []byte(`{"orderCount":20}`), asJSON)
	f.Add("p", "S1", []byte(`{"orderCount":0}`), asJSON)
	f.Add("p", "S1", []byte(`{"orderCount":-1}`), asJSON)
	f.Add("p", "S1", []byte(`{"orderCount":2147483648}`), asJSON)
	f.Add("p", "S1", []byte(`{"orderCount":"1"}`), asJSON)
	f.Add("p", "S1", []byte(`{"state":"down"}`), asJSON)
	f.Add("p", "S9", []byte(`{}`), asJSON)
	f.Add("nope", "S1", []byte(`{}`), asJSON)
	f.Add("p", "S 1", []byte(`{}`), asJSON)
	f.Add("idle", "D", []byte(`{"orderCount":3}`), uint8(5))
	f.Fuzz(func(t *testing.T, pool, compID string, body []byte, flags uint8) {
		flags &^= flagKey
		s := newFuzzServer(t)
		r := s.request("POST", poolPathFor(pool, "/scales/"+url.PathEscape(compID)+"/heartbeat"), "", body, flags, "")
		what := describe(func() string {
			return fmt.Sprintf("heartbeat pool %q Scale %q (flags %#x) %q", pool, compID, flags, body)
		})
		bad := transport(body, flags)
		root, bodyBad := parseJSONObject(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		bad = append(bad, idViolations(compID)...)
		var orderCount *int64
		if root != nil {
			bad = append(bad, unknownMembers(root, "orderCount")...)
			if raw, ok := root["orderCount"]; ok {
				v, vd := integer(raw)
				if bad = appendIf(bad, vd); vd == nil {
					if v < 0 || v > 1<<31-1 {
						bad = append(bad, verdict{422, "out-of-range"})
					}
					orderCount = &v
				}
			}
		}
		var scales []dispatch.Scale
		i := -1
		if len(bad) == 0 {
			if !slices.Contains(fuzzPools, pool) {
				bad = append(bad, verdict{404, "pool-not-found"})
			} else {
				scales = s.scales(pool)
				if i = slices.IndexFunc(scales, func(sc dispatch.Scale) bool { return sc.CompID == compID }); i < 0 {
					bad = append(bad, verdict{404, "scale-not-found"})
				}
			}
		}
		rec, _, taken := s.sendRefusable(t, what, r, pool, bad)
		if !taken {
			return
		}
		want := scales[i]
		want.LastHeartbeatAt = fuzzNow
		if orderCount != nil {
			want.BaseLoad = max(0, *orderCount-want.Outstanding)
		}
		var got healthScale
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: got %d %s, want 200 and a Scale", what, rec.Code, rec.Body)
		}
		if got.CompID != compID || got.Health != "up" || got.LastHeartbeatAt != fuzzCreatedAt || got.BaseLoad != want.BaseLoad || got.State != string(want.State) {
			t.Fatalf("%s: got %+v, want %+v", what, got, want)
		}
		after := s.scales(pool)
		for j, sc := range after {
			if k := slices.IndexFunc(scales, func(x dispatch.Scale) bool { return x.CompID == sc.CompID }); k != j || (sc.CompID != compID && sc != scales[k]) || (sc.CompID == compID && sc != want) {
				t.Fatalf("%s: Scale %s is %+v, want %+v", what, sc.CompID, sc, want)
			}
		}
	})
}

// FuzzDecodeFail sends POST /v1/pools/{pool}/orders/{orderId}/fail with an
// arbitrary pool, order id, Content-Type and body. In the fuzzed server the
// order "held" is on S1 of pool p, where S2 has room and S3 is eligible. A
// request without violations answers 200 with the order: moved off the
// Scale it names, once, if the order was on it (and the report counted
// against that Scale), else as it was with nothing changed. Every refusal
// is one of the request's violations and changes nothing.
func FuzzDecodeFail(f *testing.F) {
	asJSON := uint8(0)
	f.Add("p", "held", []byte(`{"compId":"S1"}`), asJSON)
	f.Add("p", "held", []byte(`{"compId":"S1","reason":"connection refused"}`), asJSON)
	f.Add("p", "held", []byte(`{"compId":"S2"}`), asJSON)
	f.Add("p", "held", []byte(`{"compId":"S9","reason":""}`), asJSON)
	f.Add("p", "held", []byte(`{}`), asJSON)
	f.Add("p", "held", []byte(``), asJSON)
	f.Add("p", "held", []byte(`{"reason":"x"}`), asJSON)
	f.Add("p", "held", []byte(`{"compId":"S1","why":"x"}`), asJSON)
	f.Add("p", "held", []byte(`{"compId":"S1","reason":null}`), asJSON)
	f.Add("p", "held", []byte(`{"compId":"S 1"}`), asJSON)
	f.Add("p", "nope", []byte(`{"compId":"S1"}`), asJSON)
	f.Add("nope", "held", []byte(`{"compId":"S1"}`), asJSON)
	f.Add("full", "held", []byte(`{"compId":"F"}`), uint8(5))
	f.Fuzz(func(t *testing.T, pool, orderID string, body []byte, flags uint8) {
		flags &^= flagKey
		s := newFuzzServer(t)
		r := s.request("POST", poolPathFor(pool, "/orders/"+url.PathEscape(orderID)+"/fail"), "", body, flags, "")
		what := describe(func() string { return fmt.Sprintf("fail pool %q order %q (flags %#x) %q", pool, orderID, flags, body) })
		bad := transport(body, flags)
		root, bodyBad := parseJSONObject(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		bad = append(bad, idViolations(orderID)...)
		var compID string
		if root != nil {
			bad = append(bad, unknownMembers(root, "compId", "reason")...)
			raw, ok := root["compId"]
			if !ok {
				bad = append(bad, verdict{400, "invalid-id"})
			} else if v, vd := text(raw); vd != nil {
				bad = append(bad, *vd)
			} else {
				compID = v
				if !validID(v) {
					bad = append(bad, verdict{400, "invalid-id"})
				}
			}
			if raw, ok := root["reason"]; ok {
				v, vd := text(raw)
				if bad = appendIf(bad, vd); vd == nil && (len(v) > 256 || !utf8.ValidString(v)) {
					bad = append(bad, verdict{422, "invalid-reason"})
				}
			}
		}
		var o dispatch.Order
		if len(bad) == 0 {
			var err error
			switch o, err = s.store.GetOrder(context.Background(), pool, orderID, fuzzNow); {
			case !slices.Contains(fuzzPools, pool):
				bad = append(bad, verdict{404, "pool-not-found"})
			case err != nil:
				bad = append(bad, verdict{404, "order-not-found"})
			}
		}
		rec, before, taken := s.sendRefusable(t, what, r, pool, bad)
		if !taken {
			return
		}
		var got movedOrder
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: got %d %s, want 200 and an order", what, rec.Code, rec.Body)
		}
		if o.CompID != compID || o.State != dispatch.Assigned {
			if got.CompID != o.CompID || got.Moves != o.Moves {
				t.Fatalf("%s: got %+v, want the order as it was, %+v", what, got, o)
			}
			s.checkUnchanged(t, what, rec.Code, pool, before)
			return
		}
		if got.CompID == compID || got.Moves != o.Moves+1 || got.State != "assigned" {
			t.Fatalf("%s: got %+v, want moved off %s once", what, got, compID)
		}
		sc, err := s.store.GetScale(context.Background(), pool, compID)
		if err != nil || sc.Failures != 1 || sc.LastFailAt != fuzzNow || sc.Outstanding != 0 {
			t.Fatalf("%s: Scale %s is %+v (%v), want 1 failure counted and no order", what, compID, sc, err)
		}
	})
}

// validID is the id pattern of DESIGN §1, read independently of dispatch.
func validID(id string) bool { return idViolations(id) == nil }
