package redis

import "slices"

// DispatchRands returns the "rand" argument (appendRand) of each batch of
// cmd, a command the Store sent, as a string ("" none), if cmd is an
// FCALL of dispatch or dispatch_many; else nil.
func DispatchRands(cmd []any) []string {
	if len(cmd) < 4 {
		return nil
	}
	name, _ := cmd[1].(string)
	nk, _ := cmd[2].(int)
	args := cmd[3+nk:]
	at := slices.Index(fnDispatch.args, "rand")
	str := func(v any) string {
		switch x := v.(type) {
		case string:
			return x
		case []byte:
			return string(x)
		}
		return "?"
	}
	switch name {
	case fnDispatch.fcall:
		return []string{str(args[at])}
	case fnDispatchMany.fcall:
		var out []string
		m, _ := args[0].(int)
		for o := 1; len(out) < m; {
			c, _ := args[o].(int)
			out = append(out, str(args[o+1+at]))
			o += 1 + c
		}
		return out
	}
	return nil
}
