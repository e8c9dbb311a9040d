package dispatch_test

import (
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
)

func TestHistogramWidth(t *testing.T) {
	for _, c := range []struct {
		lo, hi int64
		n      int
		want   int64
	}{
		{0, 0, 20, 1}, {0, 19, 20, 1}, {0, 20, 20, 2}, {5, 44, 20, 2}, {0, 2147483647, 20, 107374183},
	} {
		w := dispatch.HistogramWidth(c.lo, c.hi, c.n)
		if w != c.want || c.lo+int64(c.n)*w <= c.hi {
			t.Errorf("HistogramWidth(%d, %d, %d): got %d, want %d, covering hi", c.lo, c.hi, c.n, w, c.want)
		}
	}
}
