package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// scaleModel reads a Scale body: the spec and its verdicts.
func scaleModel(body []byte) (dispatch.ScaleSpec, []verdict) {
	var spec dispatch.ScaleSpec
	root, bad := parseJSONObject(body)
	if root == nil {
		return spec, bad
	}
	bad = append(bad, unknownMembers(root, "weight", "state", "maxOrders", "orderCount")...)
	number := func(name string, lo, hi int64) *int64 {
		raw, ok := root[name]
		if !ok {
			return nil
		}
		v, vd := integer(raw)
		if bad = appendIf(bad, vd); vd != nil {
			return nil
		}
		if v < lo || v > hi {
			bad = append(bad, verdict{422, "out-of-range"})
		}
		return &v
	}
	spec.Weight = number("weight", 1, 1_000_000)
	spec.MaxOrders = number("maxOrders", 0, 1<<31-1)
	spec.OrderCount = number("orderCount", 0, 1<<31-1)
	if raw, ok := root["state"]; ok {
		v, vd := text(raw)
		bad = appendIf(bad, vd)
		if vd == nil && v != "active" && v != "draining" && v != "down" {
			bad = append(bad, verdict{422, "invalid-state"})
		}
		st := dispatch.ScaleState(v)
		spec.State = &st
	}
	return spec, bad
}

// FuzzDecodeScale sends PUT /v1/pools/{pool}/scales/{compId} with an
// arbitrary pool, compId, Content-Type and body. A request without
// violations registers the Scale (201 with Location) or updates it (200):
// the fields sent change, the others keep their value or default, the
// orderCount sent sets baseLoad to max(0, orderCount − outstanding), and
// nothing else changes. Every refusal is one of the request's violations
// and changes nothing.
func FuzzDecodeScale(f *testing.F) {
	asJSON := uint8(0)
	f.Add("p", "S4", []byte(`{"weight":3,"state":"active","maxOrders":10,"orderCount":7}`), asJSON)
	f.Add("p", "S1", []byte(`{"orderCount":0}`), asJSON) // S1 holds an order: baseLoad stays 0
	f.Add("p", "S3", []byte(`{"state":"down"}`), asJSON)
	f.Add("p", "S2", []byte(``), asJSON)
	f.Add("full", "F", []byte(`{"maxOrders":0}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":0}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":1000001}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":-0}`), asJSON)
	f.Add("p", "S4", []byte(`{"maxOrders":2147483648}`), asJSON)
	f.Add("p", "S4", []byte(`{"orderCount":-1}`), asJSON)
	f.Add("p", "S4", []byte(`{"orderCount":99999999999999999999}`), asJSON) // beyond 64 bits: 422
	f.Add("p", "S4", []byte(`{"weight":1.0}`), asJSON)                      // 400: a fraction
	f.Add("p", "S4", []byte(`{"weight":1e2}`), asJSON)                      // 400: an exponent
	f.Add("p", "S4", []byte(`{"weight":"2"}`), asJSON)
	f.Add("p", "S4", []byte(`{"state":"idle"}`), asJSON)
	f.Add("p", "S4", []byte(`{"state":null}`), asJSON)
	f.Add("p", "S4", []byte(`{"weight":2,"x":1}`), asJSON)
	f.Add("p", "S 4", []byte(`{}`), asJSON)
	f.Add("p", "", []byte(`{}`), asJSON)
	f.Add("nope", "S1", []byte(`{}`), asJSON)
	f.Add("p", "S4", []byte(`{}`), uint8(5))
	f.Fuzz(func(t *testing.T, pool, compID string, body []byte, flags uint8) {
		flags &^= flagKey
		s := newFuzzServer(t)
		r := s.request("PUT", poolPathFor(pool, "/scales/"+url.PathEscape(compID)), "", body, flags, "")
		what := describe(func() string { return fmt.Sprintf("PUT pool %q Scale %q (flags %#x) %q", pool, compID, flags, body) })
		bad := transport(body, flags)
		spec, bodyBad := scaleModel(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		bad = append(bad, idViolations(compID)...)
		var conflict []verdict
		if len(bad) == 0 && !slices.Contains(fuzzPools, pool) {
			conflict = append(conflict, verdict{404, "pool-not-found"})
		}

		var scales []dispatch.Scale
		if len(bad)+len(conflict) == 0 {
			scales = s.scales(pool)
		}
		rec, _, taken := s.sendRefusable(t, what, r, pool, append(bad, conflict...))
		if !taken {
			return
		}

		// The Scale as it must be now.
		i := slices.IndexFunc(scales, func(sc dispatch.Scale) bool { return sc.CompID == compID })
		want, status := dispatch.Scale{CompID: compID, Weight: 1, State: dispatch.Active}, 201
		if i >= 0 {
			want, status = scales[i], 200
		}
		if spec.Weight != nil {
			want.Weight = *spec.Weight
		}
		if spec.MaxOrders != nil {
			want.MaxOrders = *spec.MaxOrders
		}
		if spec.State != nil {
			want.State = *spec.State
		}
		if spec.OrderCount != nil {
			want.BaseLoad = max(0, *spec.OrderCount-want.Outstanding)
		}
		var got scaleBody
		if rec.Code != status || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: got %d %s, want %d and a Scale", what, rec.Code, rec.Body, status)
		}
		if loc := rec.Header().Get("Location"); status == 201 && loc != "/v1/pools/"+pool+"/scales/"+compID || status == 200 && loc != "" {
			t.Fatalf("%s: got Location %q", what, loc)
		}
		if wantBody := (scaleBody{want.CompID, want.Weight, string(want.State), want.MaxOrders, want.OrderCount(), want.Outstanding, want.BaseLoad}); got != wantBody {
			t.Fatalf("%s: got %+v, want %+v", what, got, wantBody)
		}

		// Only that Scale changed, and the table is waterfill's over the
		// eligible Scales.
		after := s.scales(pool)
		var eligible []balancing.Load
		for _, sc := range after {
			j := slices.IndexFunc(scales, func(x dispatch.Scale) bool { return x.CompID == sc.CompID })
			switch {
			case sc.CompID == compID:
				if sc.Weight != want.Weight || sc.State != want.State || sc.MaxOrders != want.MaxOrders ||
					sc.Outstanding != want.Outstanding || sc.BaseLoad != want.BaseLoad {
					t.Fatalf("%s: the store has %+v, want %+v", what, sc, want)
				}
			case j < 0 || sc != scales[j]:
				t.Fatalf("%s: Scale %s changed: %+v", what, sc.CompID, sc)
			}
			if sc.Eligible() {
				eligible = append(eligible, balancing.Load{ID: sc.CompID, Count: sc.OrderCount()})
			}
		}
		if len(after) != len(scales)+btoi(status == 201) {
			t.Fatalf("%s: %d Scales after, %d before", what, len(after), len(scales))
		}
		tab, err := s.store.Table(context.Background(), pool)
		ids, counts := balancing.Table(balancing.SortLoads(eligible))
		if err != nil || !slices.Equal(tab.CompIDs, ids) || !slices.Equal(tab.DispatchCounts, counts) {
			t.Fatalf("%s: table %v %v (%v), want %v %v", what, tab.CompIDs, tab.DispatchCounts, err, ids, counts)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzDecodePool sends PUT /v1/pools/{pool} with an arbitrary pool,
// Content-Type and body. A request without violations creates the pool
// (201 with Location) or updates it (200): the fields sent change, the
// others keep their value or default, and no other pool and none of its
// Scales changes. Every refusal is one of the request's violations and
// changes nothing.
func FuzzDecodePool(f *testing.F) {
	asJSON := uint8(0)
	f.Add("q", []byte(`{"strategy":"round-robin","slowStartSeconds":600}`), asJSON)
	f.Add("p", []byte(`{"strategy":"consistent-hash"}`), asJSON)
	f.Add("full", []byte(`{"slowStartSeconds":86400}`), asJSON)
	f.Add("idle", []byte(``), asJSON)
	f.Add("q", []byte(`{"strategy":"fastest"}`), asJSON)
	f.Add("q", []byte(`{"strategy":"Waterfill"}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":86401}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":-1}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":9223372036854775808}`), asJSON)
	f.Add("q", []byte(`{"slowStartSeconds":60.5}`), asJSON)
	f.Add("q", []byte(`{"strategy":null}`), asJSON)
	f.Add("q", []byte(`{"name":"q"}`), asJSON)
	f.Add("q", []byte("\v"), asJSON)
	f.Add("q", []byte("\u00a0"), asJSON)
	f.Add(strings.Repeat("q", 129), []byte(`{}`), asJSON)
	f.Add("-q", []byte(`{}`), asJSON)
	f.Add("q.1:a_b", []byte(`{}`), asJSON)
	f.Add("%71", []byte(`{}`), asJSON)
	f.Add("", []byte(`{}`), asJSON)
	f.Add("p", []byte(`{"heartbeatTimeoutMs":5000,"onLapse":"reassign","maxFails":3,"failWindowMs":1000,"ejectMs":3600000}`), asJSON)
	f.Add("q", []byte(`{"heartbeatTimeoutMs":0}`), asJSON)
	f.Add("q", []byte(`{"heartbeatTimeoutMs":999}`), asJSON)
	f.Add("q", []byte(`{"maxFails":10001,"onLapse":"drop"}`), asJSON)
	f.Add("q", []byte(`{"ejectMs":9223372036854775807}`), asJSON)
	f.Add("q", []byte(`{"onLapse":null}`), asJSON)
	f.Fuzz(func(t *testing.T, pool string, body []byte, flags uint8) {
		flags &^= flagKey
		s := newFuzzServer(t)
		r := s.request("PUT", poolPathFor(pool, ""), "", body, flags, "")
		what := describe(func() string { return fmt.Sprintf("PUT pool %q (flags %#x) %q", pool, flags, body) })
		bad := transport(body, flags)
		root, bodyBad := parseJSONObject(body)
		bad = append(bad, bodyBad...)
		bad = append(bad, idViolations(pool)...)
		var strategy, onLapse *string
		var slowStart *int64
		ms := map[string]*int64{}
		if root != nil {
			bad = append(bad, unknownMembers(root, "strategy", "slowStartSeconds", "heartbeatTimeoutMs", "onLapse", "maxFails", "failWindowMs", "ejectMs")...)
			for _, r := range []struct {
				name   string
				lo, hi int64
				zero   bool // 0 allowed besides the range
			}{
				{"heartbeatTimeoutMs", 1000, 3_600_000, true},
				{"maxFails", 0, 10_000, false},
				{"failWindowMs", 1000, 3_600_000, false},
				{"ejectMs", 1000, 3_600_000, false},
			} {
				raw, ok := root[r.name]
				if !ok {
					continue
				}
				v, vd := integer(raw)
				if bad = appendIf(bad, vd); vd == nil {
					if (v < r.lo || v > r.hi) && !(r.zero && v == 0) {
						bad = append(bad, verdict{422, "out-of-range"})
					}
					ms[r.name] = &v
				}
			}
			if raw, ok := root["onLapse"]; ok {
				v, vd := text(raw)
				if bad = appendIf(bad, vd); vd == nil {
					if v != "hold" && v != "reassign" {
						bad = append(bad, verdict{422, "invalid-on-lapse"})
					}
					onLapse = &v
				}
			}
			if raw, ok := root["strategy"]; ok {
				v, vd := text(raw)
				if bad = appendIf(bad, vd); vd == nil {
					// (TestSpecMatchesCode holds the registry to openapi.yaml's enum)
					if !slices.Contains(dispatch.Strategies, dispatch.Strategy(v)) {
						bad = append(bad, verdict{422, "unknown-strategy"})
					}
					strategy = &v
				}
			}
			if raw, ok := root["slowStartSeconds"]; ok {
				v, vd := integer(raw)
				if bad = appendIf(bad, vd); vd == nil {
					if v < 0 || v > 86400 {
						bad = append(bad, verdict{422, "out-of-range"})
					}
					slowStart = &v
				}
			}
		}

		rec, before, taken := s.sendRefusable(t, what, r, pool, bad)
		if !taken {
			return
		}
		want, status := poolBody{Name: pool, Strategy: "waterfill", CreatedAt: fuzzCreatedAt}, 201
		var scales []dispatch.Scale
		if slices.Contains(fuzzPools, pool) {
			p, err := s.store.GetPool(context.Background(), pool)
			if err != nil {
				t.Fatal(err)
			}
			want = poolBody{Name: pool, Strategy: string(p.Strategy), SlowStartSeconds: int64(p.SlowStart / time.Second),
				ScaleCount: p.ScaleCount, CreatedAt: fuzzCreatedAt}
			status = 200
			scales = s.scales(pool)
		}
		if strategy != nil {
			want.Strategy = *strategy
		}
		if slowStart != nil {
			want.SlowStartSeconds = *slowStart
		}
		var got poolBody
		if rec.Code != status || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
			t.Fatalf("%s: got %d %s, want %d and a pool", what, rec.Code, rec.Body, status)
		}
		if loc := rec.Header().Get("Location"); status == 201 && loc != "/v1/pools/"+pool || status == 200 && loc != "" {
			t.Fatalf("%s: got Location %q", what, loc)
		}
		if got != want {
			t.Fatalf("%s: got %+v, want %+v", what, got, want)
		}
		var gotHealth healthOptionsBody
		if err := json.Unmarshal(rec.Body.Bytes(), &gotHealth); err != nil {
			t.Fatal(err)
		}
		wantHealth := healthOptionsBody{OnLapse: "hold", FailWindowMs: 10000, EjectMs: 30000}
		if status == 200 {
			p, _ := s.store.GetPool(context.Background(), pool)
			_ = json.Unmarshal(mustJSON(t, p.Health), &wantHealth)
		}
		wantHealth.set(ms, onLapse)
		if gotHealth != wantHealth {
			t.Fatalf("%s: got health options %+v, want %+v", what, gotHealth, wantHealth)
		}
		if p, err := s.store.GetPool(context.Background(), pool); err != nil || p.Name != pool || string(p.Strategy) != want.Strategy ||
			p.SlowStart != time.Duration(want.SlowStartSeconds)*time.Second || p.ScaleCount != want.ScaleCount {
			t.Fatalf("%s: the store has %+v, %v; want %+v", what, p, err, want)
		}
		if after := s.scales(pool); !slices.Equal(after, scales) && len(after)+len(scales) > 0 {
			t.Fatalf("%s: the Scales changed from %+v to %+v", what, scales, after)
		}
		for _, snap := range before {
			if snap.Pool.Name != pool && !reflect.DeepEqual(storetest.Snapshot(t, s.store, snap.Pool.Name), snap) {
				t.Fatalf("%s: pool %s changed", what, snap.Pool.Name)
			}
		}
	})
}

// healthOptionsBody is the health options of a pool body.
type healthOptionsBody struct {
	HeartbeatTimeoutMs int64  `json:"heartbeatTimeoutMs"`
	OnLapse            string `json:"onLapse"`
	MaxFails           int64  `json:"maxFails"`
	FailWindowMs       int64  `json:"failWindowMs"`
	EjectMs            int64  `json:"ejectMs"`
}

// set applies the options a request sent.
func (h *healthOptionsBody) set(ms map[string]*int64, onLapse *string) {
	for name, to := range map[string]*int64{
		"heartbeatTimeoutMs": &h.HeartbeatTimeoutMs, "maxFails": &h.MaxFails,
		"failWindowMs": &h.FailWindowMs, "ejectMs": &h.EjectMs,
	} {
		if v := ms[name]; v != nil {
			*to = *v
		}
	}
	if onLapse != nil {
		h.OnLapse = *onLapse
	}
}

// mustJSON is the options of the store in the API's units.
func mustJSON(t *testing.T, h dispatch.HealthOptions) []byte {
	t.Helper()
	b, err := json.Marshal(healthOptionsBody{
		HeartbeatTimeoutMs: h.HeartbeatTimeout.Milliseconds(), OnLapse: string(h.OnLapse), MaxFails: h.MaxFails,
		FailWindowMs: h.FailWindow.Milliseconds(), EjectMs: h.EjectTime.Milliseconds(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
