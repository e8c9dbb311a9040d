package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// checkText reports errMalformedJSON for a JSON text that encoding/json
// would read but not as sent: bytes that are not UTF-8 (RFC 8259 §8.1) and
// \u escapes of half a surrogate pair, each of which it reads as U+FFFD (so
// that two different keys become one), and an object member given twice
// (§4), of which it keeps the last and hides the first from every check.
// body must be one valid JSON value (with white space around it) but for
// its encoding; the errors give offsets in body.
func checkText(body []byte) error {
	if !utf8.Valid(body) {
		at := 0
		for {
			r, size := utf8.DecodeRune(body[at:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			at += size
		}
		return fmt.Errorf("%w: the body is not UTF-8 (byte 0x%02x at %d)", errMalformedJSON, body[at], at)
	}
	if esc, at := loneSurrogate(body); esc != "" {
		return fmt.Errorf("%w: %s at byte %d is half of a UTF-16 surrogate pair, not a character", errMalformedJSON, esc, at)
	}
	if name, ok := repeatedName(body); ok {
		return fmt.Errorf("%w: member %q is given twice in one object", errMalformedJSON, name)
	}
	return nil
}

// loneSurrogate returns the first \u escape of the JSON text raw that is
// half of a UTF-16 surrogate pair without its other half, and its offset;
// "" when there is none. In valid JSON a backslash starts an escape inside
// a string, and nowhere else.
func loneSurrogate(raw []byte) (string, int) {
	for i := 0; i+1 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escape of one character, perhaps a backslash
			continue
		}
		r, _ := hex4(raw, i+2)
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return string(raw[i : i+6]), i
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := hex4(raw, i+8)
			if !ok || raw[i+6] != '\\' || raw[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
				return string(raw[i : i+6]), i
			}
			i += 6 // the low half is this pair's
		}
		i += 5
	}
	return "", 0
}

// hex4 reads the four hexadecimal digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// repeatedName returns a member name that some object of the valid JSON
// text raw gives twice (names compared as decoded, escapes resolved).
func repeatedName(raw []byte) (string, bool) {
	// Each open object or array has a frame; an object's frame holds its
	// names so far and whether the next string is a name.
	type frame struct {
		names    map[string]bool // nil for an array
		wantName bool
	}
	var stack []*frame
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false // the end: raw is valid JSON
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if name, ok := t.(string); ok && top != nil && top.wantName {
			if top.names[name] {
				return name, true
			}
			top.names[name] = true
			top.wantName = false
			continue
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, &frame{names: map[string]bool{}, wantName: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// a value has ended: its object, if any, wants a name next
		if len(stack) > 0 && stack[len(stack)-1].names != nil {
			stack[len(stack)-1].wantName = true
		}
	}
}
