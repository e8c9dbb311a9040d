package redis

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// luaSources returns the library's Lua files by name.
func luaSources(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Lua files: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(src)
	}
	return out
}

// withoutComments drops Lua's line comments, so that the prose does not
// count as code.
func withoutComments(src string) string {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "--"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

// TestLuaKeys: the Lua names only the keys of keys.go (K.<name>), uses
// each of them, and the preamble binds each function's keys in the order
// its Go call passes them.
func TestLuaKeys(t *testing.T) {
	known := map[string]bool{keyCall: true}
	for _, k := range poolKeys {
		known[k] = true
	}
	used := map[string]bool{}
	ref := regexp.MustCompile(`\bK\.(\w+)`)
	for name, src := range luaSources(t) {
		for _, m := range ref.FindAllStringSubmatch(withoutComments(src), -1) {
			used[m[1]] = true
			if !known[m[1]] {
				t.Errorf("%s uses key K.%s, which keys.go does not name", name, m[1])
			}
		}
	}
	for _, k := range append(slices.Clone(poolKeys), keyCall) {
		if !used[k] {
			t.Errorf("keys.go names key %s, which no Lua file uses", k)
		}
	}

	// The preamble binds each function's keys in the order the Go call
	// passes them: the pool's when the first key changed, then the call's.
	bind := regexp.MustCompile(`(?m)^  BIND\['(\w+)'\] = function\(keys\)\n    k = k or keyTable\('\w+'\)\n` +
		`    if keys\[1\] ~= k1 then\n      k1 = keys\[1\]\n((?:      k\.\w+ = keys\[\d+\]\n)*)    end\n` +
		`((?:    k\.\w+ = keys\[\d+\] or false\n)?)    K = k$`)
	key := regexp.MustCompile(`k\.(\w+) = keys\[(\d+)\]`)
	bound := map[string][]string{}
	for _, m := range bind.FindAllStringSubmatch(lib.code, -1) {
		for _, k := range key.FindAllStringSubmatch(m[2]+m[3], -1) {
			if i, _ := strconv.Atoi(k[2]); i != len(bound[m[1]])+1 {
				t.Fatalf("%s binds K.%s to keys[%s], want keys[%d]", m[1], k[1], k[2], len(bound[m[1]])+1)
			}
			bound[m[1]] = append(bound[m[1]], k[1])
		}
	}
	ph := (&heads{}).of("p")
	for _, fn := range lib.fns {
		tok := ""
		if slices.Contains(fn.keys, keyCall) {
			tok = "tok"
		}
		cmd := append(ph.start(fn, "p", tok, 1), "arg")
		want := "fcall"
		if fn.readOnly {
			want = "fcall_ro" // which a Cluster may send to a replica
		}
		if n := cmd[2].(int); len(cmd) != 3+n+1 || cmd[0] != want || cmd[1] != fn.fcall || cmd[3+n] != "arg" {
			t.Fatalf("%s: the call sends %v, want FCALL, its name, the number of keys, the keys and its argument", fn.name, cmd)
		}
		var passed []string
		for _, k := range cmd[3 : len(cmd)-1] {
			name, _ := strings.CutPrefix(k.(string), poolPrefix("p"))
			name, _, _ = strings.Cut(name, ":")
			passed = append(passed, name)
		}
		if b, ok := bound[fn.name]; !ok || !slices.Equal(b, passed) {
			t.Errorf("%s: the preamble binds keys %v, the Go call passes %v", fn.name, b, passed)
		}
	}
}

// TestLuaMetaFields: every field of meta the Lua reads or writes by name is
// one of keys.go's meta* constants, and every constant is used, by the Lua
// or through the preamble (COUNTERS, POOLFIELDS).
func TestLuaMetaFields(t *testing.T) {
	known := map[string]bool{}
	for _, f := range metaFields {
		known[f] = true
	}
	used := map[string]bool{}
	for _, f := range append(slices.Clone(poolFields), metaDispatched, metaCompleted, metaCancelled, metaMoved, metaFailed) {
		used[f] = true
	}
	// redis.call('CMD', K.meta, args): the fields are every argument but
	// HSET's values and HINCRBY's increment.
	call := regexp.MustCompile(`redis\.call\('(\w+)', K\.meta((?:,\s*[^,()]+(?:\([^()]*\))?)*)\)`)
	sep := regexp.MustCompile(`,\s*`)
	literal := regexp.MustCompile(`^'([^']*)'$`)
	hashCall := regexp.MustCompile(`redis\.call\('(H\w+)', K\.meta\b`)
	for name, src := range luaSources(t) {
		code := withoutComments(src)
		matched := 0
		for _, m := range call.FindAllStringSubmatch(code, -1) {
			cmd := strings.ToUpper(m[1])
			if !strings.HasPrefix(cmd, "H") {
				continue
			}
			matched++
			args := sep.Split(strings.TrimSpace(strings.TrimPrefix(m[2], ",")), -1)
			for i, a := range args {
				a = strings.TrimSpace(a)
				if a == "" || (cmd == "HSET" && i%2 == 1) || (cmd == "HINCRBY" && i > 0) {
					continue
				}
				lit := literal.FindStringSubmatch(a)
				switch {
				case lit != nil:
					used[lit[1]] = true
					if !known[lit[1]] {
						t.Errorf("%s: %s of meta field %q, which keys.go does not name", name, cmd, lit[1])
					}
				case strings.HasPrefix(a, "COUNTERS") || a == "unpack(POOLFIELDS)":
				default:
					t.Errorf("%s: %s of meta field %s: name the field (a keys.go constant) or add the expression here",
						name, cmd, a)
				}
			}
		}
		if n := len(hashCall.FindAllString(code, -1)); n != matched {
			t.Errorf("%s: %d hash commands on meta, %d of them read here: write each on one line", name, n, matched)
		}
	}
	for _, f := range metaFields {
		if !used[f] {
			t.Errorf("keys.go names meta field %q, which the Lua does not use", f)
		}
	}
}

// TestLuaArguments: the Lua reads each function's arguments by the names
// functions.go gives them (NAME.arg, or P.arg after local P = NAME), and
// uses every one.
func TestLuaArguments(t *testing.T) {
	tables := map[string]*function{}
	for _, fn := range lib.fns {
		if len(fn.args) > 0 {
			tables[strings.ToUpper(fn.name)] = fn
		}
	}
	alias := regexp.MustCompile(`local (\w+) = ([A-Z_]+)\n`)
	used := map[string]map[string]bool{}
	for name, src := range luaSources(t) {
		code := withoutComments(src)
		names := map[string]string{}
		for table := range tables {
			names[table] = table
		}
		for _, m := range alias.FindAllStringSubmatch(code, -1) {
			if tables[m[2]] != nil {
				names[m[1]] = m[2]
			}
		}
		for local, table := range names {
			ref := regexp.MustCompile(`\b` + local + `\.(\w+)`)
			for _, m := range ref.FindAllStringSubmatch(code, -1) {
				if !slices.Contains(tables[table].args, m[1]) {
					t.Errorf("%s reads argument %s.%s, which functions.go does not give %s", name, table, m[1], tables[table].name)
				}
				if used[table] == nil {
					used[table] = map[string]bool{}
				}
				used[table][m[1]] = true
			}
		}
	}
	for _, table := range slices.Sorted(maps.Keys(tables)) {
		for _, a := range tables[table].args {
			if !used[table][a] {
				t.Errorf("functions.go gives %s argument %s, which the Lua never reads", tables[table].name, a)
			}
		}
	}
}
