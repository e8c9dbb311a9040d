package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/client"
)

func TestParseInterleaved(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string
		key  string
	}{
		{[]string{"eu", "o-1", "-key", "k", "o-2"}, "eu o-1 o-2", "k"},
		{[]string{"-key", "k", "eu"}, "eu", "k"},
		{[]string{"eu", "--", "-key", "o-1"}, "eu -key o-1", ""},
		{[]string{"eu"}, "eu", ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		key := fs.String("key", "", "")
		pos, err := parseInterleaved(fs, c.args)
		if err != nil || strings.Join(pos, " ") != c.pos || *key != c.key {
			t.Errorf("%v: got %q, key %q, %v; want %q, key %q", c.args, pos, *key, err, c.pos, c.key)
		}
	}
}

func TestFind(t *testing.T) {
	for in, want := range map[string]string{
		"scales eu":              "scales",
		"scales get eu S1":       "scales get",
		"pools":                  "pools",
		"orders complete eu o-1": "orders complete",
		"orders":                 "",
	} {
		c, _ := find(strings.Fields(in))
		got := ""
		if c != nil {
			got = c.name
		}
		if got != want {
			t.Errorf("find(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadOrders(t *testing.T) {
	orders, err := readOrders(strings.NewReader("{\"id\":\"o-1\"}\n\n  {\"key\":\"c\"}  \n{}\n"))
	if err != nil || len(orders) != 3 || orders[0].ID != "o-1" || orders[1].Key != "c" || orders[2] != (client.OrderInput{}) {
		t.Fatalf("readOrders: %+v, %v", orders, err)
	}
	for _, bad := range []string{"o-1\n", "{\"id\":1}\n", "{\"name\":\"x\"}\n", "{} {}\n"} {
		if _, err := readOrders(strings.NewReader(bad)); err == nil {
			t.Errorf("readOrders(%q): no error", bad)
		}
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		s    client.Scale
		top  int64
		want string
	}{
		{client.Scale{Outstanding: 5, BaseLoad: 5}, 20, "█████▒▒▒▒▒          "},
		{client.Scale{Outstanding: 20}, 20, "████████████████████"},
		{client.Scale{BaseLoad: 2, MaxOrders: 10}, 20, "▒▒       |          "},
		{client.Scale{}, 20, "                    "},
	} {
		if got := bar(c.s, c.top, 20); got != c.want {
			t.Errorf("bar(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestFrameFitsTheScreen(t *testing.T) {
	s := snapshot{At: time.Now(), Pool: &client.Pool{Name: "eu", Strategy: client.StrategyWaterfill}, ScaleCount: 50}
	for i := range 50 {
		s.Scales = append(s.Scales, client.Scale{CompID: "S" + strings.Repeat("x", i), OrderCount: int64(i), Outstanding: int64(i), State: client.ScaleActive})
	}
	lines := frame(s, 60, 10, time.Second, false)
	if len(lines) > 10 {
		t.Fatalf("%d lines on a screen of 10", len(lines))
	}
	for _, l := range lines {
		if n := len([]rune(l)); n > 60 {
			t.Errorf("line of %d runes on a screen 60 wide: %q", n, l)
		}
	}
	if last := lines[len(lines)-1]; last != "the 6 least loaded of 50 Scales" {
		t.Errorf("footer %q", last)
	}
}
