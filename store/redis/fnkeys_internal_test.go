package redis

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// luaUnit is one top-level definition of the library: a local function, a
// local value, or the assignments to a table defined earlier (such as
// STRATEGIES['random'] = …), with the keys it names (K.<name>) and the
// other top-level definitions it refers to.
type luaUnit struct {
	keys map[string]bool
	refs map[string]bool
}

// luaCode returns src without its comments and with its string literals
// emptied, so that neither prose nor a string counts as code.
func luaCode(src string) string {
	var b strings.Builder
	longEnd := func(i int) (string, int) { // a long bracket [[, [=[ … at i
		j := i + 1
		for j < len(src) && src[j] == '=' {
			j++
		}
		if j < len(src) && src[j] == '[' {
			return "]" + strings.Repeat("=", j-i-1) + "]", j + 1
		}
		return "", i
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "--"):
			if end, j := longEnd(i + 2); end != "" && i+2 < len(src) && src[i+2] == '[' {
				k := strings.Index(src[j:], end)
				if k < 0 {
					return b.String()
				}
				b.WriteString(strings.Repeat("\n", strings.Count(src[i:j+k], "\n")))
				i = j + k + len(end)
				continue
			}
			k := strings.IndexByte(src[i:], '\n')
			if k < 0 {
				return b.String()
			}
			i += k
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			b.WriteString("''")
			i = j + 1
		case c == '[':
			if end, j := longEnd(i); end != "" {
				k := strings.Index(src[j:], end)
				if k < 0 {
					return b.String()
				}
				b.WriteString("''")
				i = j + k + len(end)
				continue
			}
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

var (
	unitStart = []*regexp.Regexp{
		regexp.MustCompile(`^local function (\w+)`),
		regexp.MustCompile(`^function ENTRY\.(\w+)`), // a registered function
		regexp.MustCompile(`^function (\w+)[.:]\w+`), // a table's function: the table's
		regexp.MustCompile(`^local (\w+(?:\s*,\s*\w+)*)\s*=`),
		regexp.MustCompile(`^(\w+)\s*[\[.]`), // STRATEGIES['x'] = …, a table's field
	}
	keyRef   = regexp.MustCompile(`\bK\.(\w+)`)
	bareK    = regexp.MustCompile(`\bK\b\s*[^.\s]|\bK\b\s*$`)
	identRef = regexp.MustCompile(`(^|[^.:\w])([A-Za-z_]\w*)`)
)

// luaUnits cuts the library's files (libFiles, in order) into their
// top-level definitions: each begins on a line that is not indented, and
// every line up to the next such line (but an end, a closing bracket, or
// a blank line) belongs to it. It fails the test on a top-level line it
// cannot name, and on a use of K other than K.<name>.
func luaUnits(t *testing.T) map[string]*luaUnit {
	t.Helper()
	srcs := luaSources(t)
	units := map[string]*luaUnit{}
	var cur []string
	var body []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		code := strings.Join(body, "\n")
		for _, name := range cur {
			u := units[name]
			if u == nil {
				u = &luaUnit{keys: map[string]bool{}, refs: map[string]bool{}}
				units[name] = u
			}
			for _, m := range keyRef.FindAllStringSubmatch(code, -1) {
				u.keys[m[1]] = true
			}
			for _, m := range identRef.FindAllStringSubmatch(code, -1) {
				u.refs[m[2]] = true
			}
		}
		cur, body = nil, nil
	}
	for _, file := range libFiles {
		for n, line := range strings.Split(luaCode(srcs[file]), "\n") {
			if bareK.MatchString(line) {
				t.Errorf("%s:%d: K used other than as K.<name>: %s", file, n+1, line)
			}
			trimmed := strings.TrimSpace(line)
			if trimmed == "" || line[0] == ' ' || line[0] == '\t' || strings.HasPrefix(line, "end") ||
				line[0] == '}' || line[0] == ')' {
				body = append(body, line)
				continue
			}
			var names []string
			for _, re := range unitStart {
				if m := re.FindStringSubmatch(line); m != nil {
					for _, s := range strings.Split(m[1], ",") {
						names = append(names, strings.TrimSpace(s))
					}
					break
				}
			}
			if names == nil {
				t.Errorf("%s:%d: a top-level line that defines nothing this test knows: %s", file, n+1, line)
				continue
			}
			flush()
			cur = names
			body = []string{line}
		}
		flush()
	}
	for name, u := range units {
		for r := range u.refs {
			if units[r] == nil || r == name {
				delete(u.refs, r)
			}
		}
	}
	return units
}

// reachedKeys returns the keys K names in entry and in every top-level
// definition it reaches through the others.
func reachedKeys(units map[string]*luaUnit, entry string) map[string]bool {
	keys := map[string]bool{}
	seen := map[string]bool{entry: true}
	todo := []string{entry}
	for len(todo) > 0 {
		u := units[todo[len(todo)-1]]
		todo = todo[:len(todo)-1]
		for k := range u.keys {
			keys[k] = true
		}
		for r := range u.refs {
			if !seen[r] {
				seen[r] = true
				todo = append(todo, r)
			}
		}
	}
	return keys
}

// TestFunctionKeys: each function of the library declares (functions.go)
// every key K names in its Lua function and in every top-level function or
// table of the library that one reaches, and no key beyond those; its
// keys are keys.go's, in poolKeys order, each once, the call key last.
func TestFunctionKeys(t *testing.T) {
	units := luaUnits(t)
	// The cut finds the helpers and their keys, and the closure follows
	// them: getScale reads scales, elig and load; read reaches load only
	// through its helpers.
	if u := units["getScale"]; u == nil || !u.keys[keyScales] || !u.keys[keyElig] || !u.keys[keyLoad] {
		t.Fatalf("getScale: %+v, want a unit naming K.scales, K.elig and K.load", u)
	}
	if u := units[fnRead.lua]; u == nil || u.keys[keyLoad] || !reachedKeys(units, fnRead.lua)[keyLoad] {
		t.Fatalf("%s: %+v, want a unit that reaches K.load through its helpers alone", fnRead.lua, u)
	}
	order := append(slices.Clone(poolKeys), keyCall)
	for _, fn := range lib.fns {
		if units[fn.lua] == nil {
			t.Errorf("%s: no top-level Lua function %s", fn.name, fn.lua)
			continue
		}
		at := -1
		for _, k := range fn.keys {
			i := slices.Index(order, k)
			if i <= at {
				t.Errorf("%s declares key %q out of poolKeys order, twice, or not in keys.go: %v", fn.name, k, fn.keys)
			}
			at = i
		}
		reached := reachedKeys(units, fn.lua)
		for _, k := range slices.Sorted(maps.Keys(reached)) {
			if !slices.Contains(fn.keys, k) {
				t.Errorf("%s (%s) reaches K.%s, which functions.go does not declare for it", fn.name, fn.lua, k)
			}
		}
		for _, k := range fn.keys {
			if !reached[k] {
				t.Errorf("%s (%s) declares key %s, which its code never names", fn.name, fn.lua, k)
			}
		}
	}
}
