package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// testListScaleOrdersAfterLeft pages through Scale A's orders, 26 a page,
// over 40 batches of 15 orders named in turn after their first order (the
// form the Redis store keeps as one own-index entry a Scale) and by a UUID
// (one entry an order), and before each next page the last order of the
// page leaves: alone, with its whole batch (listed or not), or with the
// whole page, in turn. A page after a cursor whose order left lists no
// order twice, and every order that stayed is listed.
func testListScaleOrdersAfterLeft(t *testing.T, s dispatch.Store) {
	newPool(t, s, "p1", "A=0")
	batchOf := map[string][]string{}
	var all []string
	for b := range 40 {
		os := ids(fmt.Sprintf("b%d-", b), 15)
		bid := fmt.Sprintf("0190a6e4-7a1b-7c3d-8e4f-%012x", b)
		if b%2 == 0 {
			bid = os[0] + ":0123456789ab"
		}
		mustDispatch(t, s, request("p1", bid, at(time.Duration(b)*time.Millisecond), os...))
		for _, id := range os {
			batchOf[id] = os
		}
		all = append(all, os...)
	}
	listed, gone := map[string]bool{}, map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page > 100 {
			t.Fatal("ListScaleOrders: no last page")
		}
		os, next, err := s.ListScaleOrders(ctx, "p1", "A", dispatch.Page{Cursor: cursor, Limit: 26})
		if err != nil {
			t.Fatalf("ListScaleOrders: %v", err)
		}
		for _, o := range os {
			if listed[o.ID] || gone[o.ID] {
				t.Errorf("page %d lists %s again (left: %v)", page, o.ID, gone[o.ID])
			}
			listed[o.ID] = true
		}
		if next == "" {
			break
		}
		cursor = next
		leave := []string{os[len(os)-1].ID}
		switch page % 3 {
		case 1:
			leave = batchOf[leave[0]]
		case 2:
			leave = leave[:0]
			for _, o := range os {
				leave = append(leave, o.ID)
			}
		}
		var done []string
		for _, id := range leave {
			if !gone[id] {
				gone[id] = true
				done = append(done, id)
			}
		}
		if _, _, err := complete(s, "p1", at(time.Second), done...); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	for _, id := range all {
		if !listed[id] && !gone[id] {
			t.Errorf("%s stayed and was never listed", id)
		}
	}
	checkScaleOrders(t, s, "p1")
}
