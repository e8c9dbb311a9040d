package api

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestReqContextRace: goroutines read a request's context (Done, Err,
// Value, Cause, derived contexts) while its deadline passes, its parent is
// cancelled or its request ends. The context's contract must hold in every
// goroutine: once Done is closed Err is non-nil; Err, once non-nil, never
// changes; Done is the same channel every call.
func TestReqContextRace(t *testing.T) {
	for round := range 300 {
		parent, cancel := context.WithCancel(context.Background())
		c := newReqContext(parent, time.Now(), time.Duration(round%7)*50*time.Microsecond+time.Microsecond)
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var first error
				var done <-chan struct{}
				for i := range 200 {
					switch (g + i) % 5 {
					case 0:
						d := c.Done()
						if done == nil {
							done = d
						} else if d != done {
							t.Error("Done changed")
							return
						}
						select {
						case <-d:
							if c.Err() == nil {
								t.Error("Done closed, Err nil")
								return
							}
						default:
						}
					case 1:
						if err := c.Err(); err != nil {
							if first == nil {
								first = err
							} else if err != first {
								t.Errorf("Err changed from %v to %v", first, err)
								return
							}
						} else if first != nil {
							t.Errorf("Err nil after %v", first)
							return
						}
					case 2:
						if cause := context.Cause(c); cause != nil && c.Err() == nil {
							t.Errorf("Cause %v with Err nil", cause)
							return
						}
					case 3:
						d, cd := context.WithCancel(c)
						select {
						case <-d.Done():
							if c.Err() == nil {
								t.Error("a derived context ended, its parent's Err nil")
							}
						default:
						}
						cd()
					case 4:
						if c.Value(stateKey{}) != &c.st {
							t.Error("Value(stateKey)")
						}
					}
				}
			}()
		}
		switch round % 3 {
		case 1:
			cancel()
		case 2:
			c.end()
		}
		wg.Wait()
		c.end()
		cancel()
		if err := c.Err(); err == nil || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: Err() = %v at the end", round, err)
		}
	}
}
