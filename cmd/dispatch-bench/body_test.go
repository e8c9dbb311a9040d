package main

import (
	"encoding/json"
	"testing"
)

func TestAppendOrders(t *testing.T) {
	got := string(appendOrders([]byte("junk"), "ab12-", 9, 3)[4:])
	want := `{"orders":[{"id":"ab12-9"},{"id":"ab12-10"},{"id":"ab12-11"}]}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Errorf("not JSON: %s", got)
	}
}

func TestAppendAnonymousOrders(t *testing.T) {
	if got, want := string(appendAnonymousOrders(nil, 3)), `{"orders":[{},{},{}]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestAppendCompletions(t *testing.T) {
	batch := `{"batchId":"b-1","pool":"p","assignments":[{"orderId":"0190a-1","compId":"s-1"},` +
		`{"orderId": "0190a-2","compId":"s-2"}]}`
	got, n := appendCompletions(nil, []byte(batch))
	want := `{"orders":[{"id":"0190a-1"},{"id":"0190a-2"}]}`
	if string(got) != want || n != 2 {
		t.Errorf("got %s (%d), want %s (2)", got, n, want)
	}
	if _, n := appendCompletions(nil, []byte(noopBody)); n != 0 {
		t.Errorf("the noop answer: got %d orders, want 0", n)
	}
}

func TestCompletedCount(t *testing.T) {
	tests := []struct {
		body string
		n    int64
		ok   bool
	}{
		{`{"completed":42}`, 42, true},
		{`{"completed": 0}` + "\n", 0, true},
		{noopBody, 0, false},
		{`{"completed":"x"}`, 0, false},
	}
	for _, tt := range tests {
		n, ok := completedCount([]byte(tt.body))
		if n != tt.n || ok != tt.ok {
			t.Errorf("%s: got %d, %v, want %d, %v", tt.body, n, ok, tt.n, tt.ok)
		}
	}
}

func TestCompID(t *testing.T) {
	tests := []struct {
		n, total int
		want     string
	}{
		{1, 100000, "s-000001"},
		{100000, 100000, "s-100000"},
		{5, 2000000, "s-0000005"},
	}
	for _, tt := range tests {
		if got := compID("s-", tt.n, tt.total); got != tt.want {
			t.Errorf("compID(%d of %d): got %s, want %s", tt.n, tt.total, got, tt.want)
		}
	}
}
