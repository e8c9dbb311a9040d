package memory_test

import (
	"testing"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/memory"
	"github.com/dispatcher/dispatcher/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(_ testing.TB, opts storetest.Options) dispatch.Store {
		return memory.New(memory.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
	})
}
