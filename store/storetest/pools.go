package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

func testPing(t *testing.T, s dispatch.Store) {
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: got %v, want nil", err)
	}
}

func testPoolCreateAndUpdate(t *testing.T, s dispatch.Store) {
	put := func(spec dispatch.PoolSpec, now time.Time, wantCreated bool, want string) {
		t.Helper()
		p, created, err := s.PutPool(ctx, "p1", spec, now)
		if err != nil {
			t.Fatalf("PutPool: %v", err)
		}
		if created != wantCreated {
			t.Errorf("PutPool: got created %v, want %v", created, wantCreated)
		}
		wantString(t, "PutPool", formatPool(p), want)
		got, err := s.GetPool(ctx, "p1")
		if err != nil {
			t.Fatalf("GetPool: %v", err)
		}
		wantString(t, "GetPool", formatPool(got), want)
	}
	put(dispatch.PoolSpec{}, t0, true,
		"pool p1 strategy=waterfill slowStart=0s scales=0 created=2025-03-01T12:00:00Z")
	put(dispatch.PoolSpec{SlowStart: ptr(time.Minute)}, at(time.Hour), false,
		"pool p1 strategy=waterfill slowStart=1m0s scales=0 created=2025-03-01T12:00:00Z")
	put(dispatch.PoolSpec{Strategy: ptr(dispatch.Waterfill)}, at(2*time.Hour), false,
		"pool p1 strategy=waterfill slowStart=1m0s scales=0 created=2025-03-01T12:00:00Z")
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{}, t0)
	putScale(t, s, "p1", "B", dispatch.ScaleSpec{}, t0)
	put(dispatch.PoolSpec{SlowStart: ptr(time.Duration(0))}, at(3*time.Hour), false,
		"pool p1 strategy=waterfill slowStart=0s scales=2 created=2025-03-01T12:00:00Z")
}

func testListPools(t *testing.T, s dispatch.Store) {
	list := func(cursor string, limit int, want, wantNext string) {
		t.Helper()
		page, next, err := s.ListPools(ctx, dispatch.Page{Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("ListPools(%q, %d): %v", cursor, limit, err)
		}
		names := make([]string, len(page))
		for i, p := range page {
			names[i] = p.Name
		}
		wantString(t, "ListPools("+cursor+")", "["+strings.Join(names, " ")+"] next="+next, "["+want+"] next="+wantNext)
	}
	list("", 10, "", "")
	for _, name := range []string{"p3", "p1", "p5", "p2", "p4"} {
		if _, _, err := s.PutPool(ctx, name, dispatch.PoolSpec{}, t0); err != nil {
			t.Fatalf("PutPool %s: %v", name, err)
		}
	}
	list("", 2, "p1 p2", "p2")
	list("p2", 2, "p3 p4", "p4")
	list("p4", 2, "p5", "")
	list("", 5, "p1 p2 p3 p4 p5", "")
	list("", 6, "p1 p2 p3 p4 p5", "")
	list("p0", 1, "p1", "p1")
	list("p25", 2, "p3 p4", "p4")
	list("p5", 2, "", "")
	list("", 0, "p1 p2 p3 p4 p5", "")
}

func testDeletePool(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0 B=3")
	newPool(t, s, "p2", "A=0")
	mustDispatch(t, s, request("p1", "b1", t0, "o1", "o2"))
	mustDispatch(t, s, request("p2", "b1", t0, "o1"))
	if err := s.DeletePool(ctx, "p1"); err != nil {
		t.Fatalf("DeletePool: %v", err)
	}
	_, err := s.GetPool(ctx, "p1")
	wantErr(t, "GetPool after delete", err, dispatch.ErrPoolNotFound)
	wantErr(t, "DeletePool again", s.DeletePool(ctx, "p1"), dispatch.ErrPoolNotFound)
	if got := len(allPools(t, s)); got != 1 {
		t.Errorf("pools after delete: got %d, want 1", got)
	}

	// Created again, the pool starts empty.
	p, created, err := s.PutPool(ctx, "p1", dispatch.PoolSpec{}, at(time.Hour))
	if err != nil || !created {
		t.Fatalf("PutPool again: got created %v, %v, want true, nil", created, err)
	}
	wantString(t, "pool created again", formatPool(p),
		"pool p1 strategy=waterfill slowStart=0s scales=0 created=2025-03-01T13:00:00Z")
	_, err = s.GetBatch(ctx, "p1", "b1", t0)
	wantErr(t, "GetBatch in the new pool", err, dispatch.ErrBatchNotFound)
	wantGone(t, s, "p1", "o1", "o2")
	_, err = s.GetScale(ctx, "p1", "A")
	wantErr(t, "GetScale in the new pool", err, dispatch.ErrScaleNotFound)
	putScale(t, s, "p1", "A", dispatch.ScaleSpec{}, at(time.Hour))
	b := mustDispatch(t, s, request("p1", "b1", at(time.Hour), "o1", "o2"))
	wantString(t, "batch in the new pool", compIDs(b), "A A")

	// The other pool is untouched.
	wantOrder(t, s, "p2", "o1", dispatch.Assigned, time.Time{})
	wantString(t, "loads of p2", loads(t, s, "p2"), "A=1")
}

func testUnknownPool(t *testing.T, s dispatch.Store) {
	newPool(t, s, "other", "A=0")
	calls := map[string]func() error{
		"GetPool":    func() error { _, err := s.GetPool(ctx, "nope"); return err },
		"DeletePool": func() error { return s.DeletePool(ctx, "nope") },
		"PutScale": func() error {
			_, _, err := s.PutScale(ctx, "nope", "A", dispatch.ScaleSpec{}, t0)
			return err
		},
		"GetScale": func() error { _, err := s.GetScale(ctx, "nope", "A"); return err },
		"ListScales": func() error {
			_, _, err := s.ListScales(ctx, "nope", dispatch.Page{Limit: 10})
			return err
		},
		"DeleteScale": func() error { return s.DeleteScale(ctx, "nope", "A", true, t0) },
		"Dispatch": func() error {
			_, _, err := s.Dispatch(ctx, request("nope", "b1", t0, "o1"))
			return err
		},
		"DryRun": func() error {
			req := request("nope", "", t0, "o1")
			req.DryRun = true
			_, _, err := s.Dispatch(ctx, req)
			return err
		},
		"GetBatch": func() error { _, err := s.GetBatch(ctx, "nope", "b1", t0); return err },
		"GetOrder": func() error { _, err := s.GetOrder(ctx, "nope", "o1", t0); return err },
		"Complete": func() error {
			_, _, err := s.Complete(ctx, "nope", []dispatch.Completion{{OrderID: "o1"}}, t0)
			return err
		},
		"Cancel": func() error { _, err := s.Cancel(ctx, "nope", "o1", t0); return err },
		"Table":  func() error { _, err := s.Table(ctx, "nope"); return err },
	}
	for name, call := range calls {
		wantErr(t, name, call(), dispatch.ErrPoolNotFound, "nope")
	}
	if got := len(allPools(t, s)); got != 1 {
		t.Errorf("pools: got %d, want 1 (calls on an unknown pool must not create it)", got)
	}
}

// testListPoolsMatch pages through pools of which a Match hides most: each
// page holds up to its limit of the visible ones, the cursor is the last
// one shown, and the hidden ones never appear.
func testListPoolsMatch(t *testing.T, s dispatch.Store) {
	// 1100 pools, the visible ones among them with a run of over 1000
	// hidden ones in between, which a store may scan in several chunks.
	var visible, names []string
	for i := range 1100 {
		name := fmt.Sprintf("p-%04d", i)
		if i == 3 || i == 1050 || i == 1051 || i == 1099 {
			name += "v"
			visible = append(visible, name)
		}
		names = append(names, name)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(names); i += 8 {
				if _, _, err := s.PutPool(ctx, names[i], dispatch.PoolSpec{}, t0); err != nil {
					errs <- fmt.Errorf("PutPool %s: %w", names[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	match := func(name string) bool { return strings.HasSuffix(name, "v") }
	for _, limit := range []int{1, 3, 4, 100} {
		var got []string
		cursor, pages := "", 0
		for {
			page, next, err := s.ListPools(ctx, dispatch.Page{Cursor: cursor, Limit: limit, Match: match})
			if err != nil {
				t.Fatalf("ListPools(%q, %d): %v", cursor, limit, err)
			}
			if len(page) > limit || (next != "" && len(page) != limit) {
				t.Fatalf("limit %d: a page of %d with next %q", limit, len(page), next)
			}
			for _, p := range page {
				got = append(got, p.Name)
			}
			if pages++; next == "" || pages > 20 {
				break
			}
			if next != page[len(page)-1].Name {
				t.Fatalf("limit %d: next %q, want the last pool shown %q", limit, next, page[len(page)-1].Name)
			}
			cursor = next
		}
		wantString(t, fmt.Sprintf("limit %d", limit), strings.Join(got, " "), strings.Join(visible, " "))
		if want := (len(visible) + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
	none := func(string) bool { return false }
	if page, next, err := s.ListPools(ctx, dispatch.Page{Limit: 10, Match: none}); err != nil || len(page) != 0 || next != "" {
		t.Errorf("a Match that accepts nothing: %d pools, next %q, %v; want none", len(page), next, err)
	}
}
