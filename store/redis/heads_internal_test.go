package redis

import (
	"fmt"
	"testing"
)

// TestHeadsForget: the heads of a Store's calls name the keys of the pool
// asked for, and a Store keeps those of at most maxHeadPools pools.
func TestHeadsForget(t *testing.T) {
	h := &heads{}
	for i := range maxHeadPools + 10 {
		pool := fmt.Sprintf("p%d", i)
		cmd := h.of(pool).start(fnRead, pool, "", 0)
		if got, want := cmd[3], poolPrefix(pool)+keyMeta; got != want {
			t.Fatalf("pool %s: the read's first key is %v, want %s", pool, got, want)
		}
	}
	n := 0
	h.pools.Range(func(any, any) bool { n++; return true })
	if n > maxHeadPools || n == 0 {
		t.Errorf("the heads of %d pools kept, want 1 to %d", n, maxHeadPools)
	}
	if ph := h.of("p3"); ph.meta != poolPrefix("p3")+keyMeta {
		t.Errorf("p3's heads after they were forgotten: meta %q", ph.meta)
	}
}
