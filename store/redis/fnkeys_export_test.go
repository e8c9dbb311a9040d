package redis

import "slices"

// LibraryWithout returns the code of a library like the store's in which
// function name does not declare key (a keys.go name), the name that
// function is registered under there, and that function's keys of pool as
// that library's Go side would pass them: a library whose Go and Lua
// disagree, for the tests of package redis_test.
func LibraryWithout(name, key, pool string) (code, fcall string, keys []string) {
	fns := make([]*function, len(lib.fns))
	var bad *function
	for i, fn := range lib.fns {
		c := *fn
		if c.name == name {
			c.keys = slices.DeleteFunc(slices.Clone(c.keys), func(k string) bool { return k == key })
			bad = &c
		}
		fns[i] = &c
	}
	l := newLibrary(libFiles, fns)
	for _, k := range newPoolHeads(pool, fns).byFun[bad.index][3:] {
		keys = append(keys, k.(string))
	}
	return l.code, bad.fcall, keys
}
