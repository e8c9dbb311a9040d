package redis_test

import (
	"errors"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// replicated runs f again while it fails with dispatch.ErrNotReplicated,
// for at most 30 s, and returns its last error: a write of a test's setup
// that the replica was slow to confirm on a loaded machine (TestWaitShared
// saw a PutPool's WAIT of a second fall short at a load average of 13) is
// retried, as docs/durability.md lets a client retry every write.
func replicated(f func() error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if !errors.Is(err, dispatch.ErrNotReplicated) || time.Now().After(deadline) {
			return err
		}
	}
}
