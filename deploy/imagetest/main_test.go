//go:build image

// Package imagetest_test builds the container image from deploy/Dockerfile
// with podman and runs it as compose.yaml does: Redis with AOF and three
// replicas. It needs root podman (it reaches the containers at their
// network addresses) and the base images of the Dockerfile and
// compose.yaml, pulled or made by ../shared/containers/bases.sh; .ci/run
// sees to both. `make test` runs it once, after the other packages:
//
//	go test -tags image -count=1 -v ./deploy/imagetest/
//
// It costs minutes (the image build most), so every test shares one stack.
package imagetest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var (
	st    *stack // the shared stack, nil when it could not start
	stErr error  // why it could not
)

func TestMain(m *testing.M) {
	start := time.Now()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st, stErr = startStack(repo)
	if errors.Is(stErr, errNoPodman) && os.Getenv("CI") != "true" {
		// No podman on a developer's machine: say so, loudly; in CI the
		// tests fail instead.
		fmt.Printf("SKIP image suite: %v\n", stErr)
		os.Exit(0)
	}
	code := m.Run()
	if st != nil {
		if os.Getenv("DISPATCHER_IMAGETEST_KEEP") == "" {
			st.teardown()
		} else {
			fmt.Printf("image suite: containers %s_* kept (DISPATCHER_IMAGETEST_KEEP)\n", prefix)
		}
		fmt.Printf("image suite: %s in all: image build %s, stack start %s\n",
			time.Since(start).Round(time.Second), st.built.Round(time.Second), st.started.Round(time.Second))
	}
	os.Exit(code)
}

// shared returns the stack, or stops the test when it did not start.
func shared(tb testing.TB) *stack {
	tb.Helper()
	if stErr != nil {
		tb.Fatalf("the stack did not start: %v", stErr)
	}
	return st
}
