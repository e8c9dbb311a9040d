package redis

// FunctionInfo is a function of the library as the tests see it.
type FunctionInfo struct {
	Name, Registered string
	Flags            []string
}

// Functions exposes the library's functions to the tests of package
// redis_test: their metric names, the names they are registered under and
// their Redis flags.
func Functions() []FunctionInfo {
	out := make([]FunctionInfo, 0, len(lib.fns))
	for _, fn := range lib.fns {
		out = append(out, FunctionInfo{Name: fn.name, Registered: fn.fcall, Flags: fn.redisFlags()})
	}
	return out
}
