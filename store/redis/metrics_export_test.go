package redis

// ScriptNames exposes the scripts' metric names to the tests of package
// redis_test.
func ScriptNames() []string {
	names := make([]string, 0, len(scriptNames))
	for _, n := range scriptNames {
		names = append(names, n)
	}
	return names
}
