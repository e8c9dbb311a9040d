package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestPercentileExactBelow256ns(t *testing.T) {
	var h histogram
	for _, v := range rand.New(rand.NewPCG(1, 2)).Perm(100) {
		h.record(time.Duration(v + 1)) // 1…100 in random order
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {90, 90}, {99, 99}, {99.9, 100}, {100, 100}, {1, 1}, {0.1, 1}} {
		if got := h.percentile(tt.p); got != tt.want {
			t.Errorf("p%v of 1…100: got %d, want %d", tt.p, got, tt.want)
		}
	}
	if h.max != 100 || h.total != 100 {
		t.Errorf("got max %d of %d values, want 100 of 100", h.max, h.total)
	}
}

func TestPercentileWithinBucketPrecision(t *testing.T) {
	var h histogram
	for i := 1; i <= 10000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 5000 * time.Microsecond}, {90, 9000 * time.Microsecond}, {99, 9900 * time.Microsecond}, {100, 10 * time.Millisecond}} {
		got := h.percentile(tt.p)
		if got < tt.want || float64(got-tt.want) > float64(tt.want)/(1<<subBits) {
			t.Errorf("p%v of 1…10000 µs: got %v, want %v to %v", tt.p, got, tt.want, tt.want+tt.want/(1<<subBits))
		}
	}
}

func TestPercentileSkewed(t *testing.T) {
	var h histogram
	for range 990 {
		h.record(time.Millisecond)
	}
	for range 10 {
		h.record(time.Second)
	}
	if got := h.percentile(99); got < time.Millisecond || got > time.Millisecond*129/128 {
		t.Errorf("p99 with 1%% at 1 s: got %v, want about 1 ms", got)
	}
	if got := h.percentile(99.1); got != time.Second {
		t.Errorf("p99.1 with 1%% at 1 s: got %v, want 1s (the exact maximum)", got)
	}
}

func TestPercentileEmpty(t *testing.T) {
	var h histogram
	if got := h.percentile(99); got != 0 {
		t.Errorf("p99 of nothing: got %v, want 0", got)
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a, b, all histogram
	for i := range 5000 {
		d := time.Duration(r.Int64N(int64(time.Second)))
		all.record(d)
		if i%3 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	a.merge(&b)
	for _, p := range []float64{1, 50, 90, 99, 99.9, 100} {
		if got, want := a.percentile(p), all.percentile(p); got != want {
			t.Errorf("p%v: got %v merged, want %v", p, got, want)
		}
	}
}

func TestBucketBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		v := r.Uint64N(1 << uint(r.IntN(50)+1))
		i := bucket(v)
		high := bucketHigh(i)
		if high < v || bucket(high) != i || bucket(high+1) != i+1 {
			t.Fatalf("value %d: bucket %d ends at %d, want the last value of the bucket", v, i, high)
		}
		if float64(high-v) > float64(v)/(1<<subBits) {
			t.Fatalf("value %d: bucket %d ends at %d, more than 1/%d above", v, i, high, 1<<subBits)
		}
	}
}
