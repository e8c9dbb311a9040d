package redis

import (
	"regexp"
	"strings"
	"testing"
)

// topLocal is a top-level local statement of the library: "local function
// name" or "local a, b =" (or a bare "local a, b"), at the start of a line.
var topLocal = regexp.MustCompile(`(?m)^local (?:function (\w+)|(\w+(?:\s*,\s*\w+)*))`)

// maxTopLocals leaves room below Lua 5.1's limit of 200 local variables in
// a chunk, past which FUNCTION LOAD fails ("main function has more than
// 200 local variables") and with it every call of the store.
const maxTopLocals = 190

// TestLibraryLocals counts the library's top-level locals: a helper with
// state of its own keeps it in a closure, and the registered functions
// live in ENTRY (lib.lua), so that the count stays under maxTopLocals.
func TestLibraryLocals(t *testing.T) {
	n := 0
	for _, m := range topLocal.FindAllStringSubmatch(withoutComments(lib.code), -1) {
		if m[1] != "" {
			n++
			continue
		}
		n += len(strings.Split(m[2], ","))
	}
	if n < 100 {
		t.Fatalf("counted %d top-level locals: the pattern no longer reads the library", n)
	}
	if n > maxTopLocals {
		t.Errorf("the library has %d top-level locals, more than %d (Lua 5.1 refuses a chunk of more than 200)", n, maxTopLocals)
	}
	t.Logf("%d top-level locals", n)
}
