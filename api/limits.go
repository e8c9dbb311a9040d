package api

import "fmt"

// maxJSONDepth is the deepest nesting of arrays and objects a request body
// may have. The deepest valid request nests 3 levels (a batch: the body,
// its orders array, an order); the margin keeps room for growth while a
// body of 4 MiB of brackets is refused before any decoder recurses into it.
const maxJSONDepth = 32

// checkDepth reports errTooDeep when body nests arrays and objects deeper
// than limit. It only tracks brackets outside strings and does not validate
// the JSON: the decoder does that afterwards. It is O(len(body)) and
// allocates nothing.
func checkDepth(body []byte, limit int) error {
	depth, inString, escaped := 0, false, false
	for i, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return fmt.Errorf("%w: more than %d levels of arrays and objects (at byte %d)", errTooDeep, limit, i)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// maxRequestIDLen is the longest X-Request-Id taken from a client.
const maxRequestIDLen = 128

// validRequestID reports whether a client's X-Request-Id may be used as
// is: 1 to maxRequestIDLen printable ASCII characters without spaces, so
// that it cannot forge log lines, flood them, or break header syntax.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
