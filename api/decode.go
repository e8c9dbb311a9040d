package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dispatcher/dispatcher/dispatch"
)

// readBody reads the request body, at most s.maxBody bytes. A body that is
// present must be declared application/json. errBodyTooLarge,
// errUnsupportedMedia, errMalformedJSON (a body cut short).
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > s.maxBody {
		return nil, s.tooLarge()
	}
	b, err := readAll(http.MaxBytesReader(w, r.Body, s.maxBody), r.ContentLength)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, s.tooLarge()
		}
		return nil, fmt.Errorf("%w: reading the body: %v", errMalformedJSON, err)
	}
	if len(b) > 0 {
		ct := headerOf(r.Header, "Content-Type")
		if ct != "application/json" {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				return nil, fmt.Errorf("%w: Content-Type %q, want application/json", errUnsupportedMedia, ct)
			}
		}
	}
	return b, nil
}

// readAll reads body whole, as io.ReadAll does, into a buffer of its
// declared length n (-1: unknown) when it has one, so that a body is not
// copied as the buffer grows; a body shorter than n is
// io.ErrUnexpectedEOF.
func readAll(body io.Reader, n int64) ([]byte, error) {
	if n <= 0 {
		return io.ReadAll(body)
	}
	b := make([]byte, n, n+bytes.MinRead)
	if _, err := io.ReadFull(body, b); err != nil {
		return nil, err
	}
	// net/http ends the body at its Content-Length; read on to EOF all the
	// same, as io.ReadAll would (in the spare room, without a copy).
	buf := bytes.NewBuffer(b)
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}

func (s *server) tooLarge() error {
	return fmt.Errorf("%w: the limit is %d bytes", errBodyTooLarge, s.maxBody)
}

// object is a JSON object being taken apart into a request. Members are
// taken by name and type; a member of the wrong type (null included) or one
// that nobody takes is an error. Objects nested in one share its first
// error, which close returns.
type object struct {
	path    string
	members map[string]jsontext.Value
	err     *error
}

// parseObject parses a request body that must hold exactly one JSON object;
// an empty body is the empty object. errTooDeep (checked before decoding),
// errMalformedJSON, errTrailingData, errWrongType.
//
// The body is read by jsontext (go-json-experiment/json, the proposed
// encoding/json/v2), which by default holds a text to RFC 8259 as sent
// where encoding/json reads it otherwise: it refuses bytes that are not
// UTF-8 (§8.1) and \u escapes of half a surrogate pair, both of which
// encoding/json reads as U+FFFD (so that two keys become one), and an
// object that gives a member twice (§4), of which encoding/json keeps the
// last and hides the first from every check.
func parseObject(body []byte) (*object, error) {
	var first error
	// Only a body of no bytes is {}: one of white space alone is no JSON
	// value, and is refused like any other.
	if len(body) == 0 {
		return &object{members: map[string]jsontext.Value{}, err: &first}, nil
	}
	if err := checkDepth(body, maxJSONDepth); err != nil {
		return nil, err
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	raw, err := dec.ReadValue()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: white space and no JSON value", errMalformedJSON)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformedJSON, err)
	}
	// raw is the decoder's until its next read.
	raw = raw.Clone()
	end := dec.InputOffset()
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON value at byte %d", errTrailingData, end)
	}
	root := &object{err: &first}
	o := root.object("body", raw)
	if o == nil {
		return nil, first
	}
	return o, nil
}

// object returns raw as a nested object named path, or nil when it is not
// an object.
func (o *object) object(path string, raw jsontext.Value) *object {
	if kind(raw) != "object" {
		o.fail(wrongType(path, raw, "object"))
		return nil
	}
	var members map[string]jsontext.Value
	if err := json.Unmarshal(raw, &members); err != nil {
		o.fail(fmt.Errorf("%w: %s: %v", errMalformedJSON, path, err))
		return nil
	}
	return &object{path: path, members: members, err: o.err}
}

func (o *object) fail(err error) {
	if *o.err == nil {
		*o.err = err
	}
}

// at names a member of o in errors.
func (o *object) at(name string) string {
	if o.path == "body" {
		return name
	}
	return o.path + "." + name
}

// take removes the member name and returns it, or false when it is absent.
func (o *object) take(name string) (jsontext.Value, bool) {
	raw, ok := o.members[name]
	delete(o.members, name)
	return raw, ok
}

// int64 takes an integer member; nil when absent or wrong. An integer
// beyond 64 bits is dispatch.ErrOutOfRange, as every bound is smaller.
func (o *object) int64(name string) *int64 {
	raw, ok := o.take(name)
	if !ok {
		return nil
	}
	if kind(raw) != "number" {
		o.fail(wrongType(o.at(name), raw, "integer"))
		return nil
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		o.fail(fmt.Errorf("%w: %s %s does not fit in 64 bits", dispatch.ErrOutOfRange, o.at(name), raw))
		return nil
	}
	if err != nil {
		o.fail(wrongType(o.at(name), raw, "integer"))
		return nil
	}
	return &v
}

// string takes a string member; nil when absent or wrong.
func (o *object) string(name string) *string {
	raw, ok := o.take(name)
	if !ok {
		return nil
	}
	if kind(raw) != "string" {
		o.fail(wrongType(o.at(name), raw, "string"))
		return nil
	}
	v, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		o.fail(fmt.Errorf("%w: %s: %v", errMalformedJSON, o.at(name), err))
		return nil
	}
	s := string(v)
	return &s
}

// objects takes a member that is an array of objects; nil when absent or
// wrong.
func (o *object) objects(name string) []*object {
	raw, ok := o.take(name)
	if !ok {
		return nil
	}
	var elems []jsontext.Value
	if kind(raw) != "array" || json.Unmarshal(raw, &elems) != nil {
		o.fail(wrongType(o.at(name), raw, "array"))
		return nil
	}
	out := make([]*object, len(elems))
	for i, e := range elems {
		if out[i] = o.object(fmt.Sprintf("%s[%d]", o.at(name), i), e); out[i] == nil {
			return nil
		}
	}
	return out
}

// close reports the first error of o and its nested objects, or else a
// member of o that was not taken. Call it after taking every member, and
// on nested objects before their parent.
func (o *object) close() error {
	if *o.err == nil && len(o.members) > 0 {
		names := make([]string, 0, len(o.members))
		for name := range o.members {
			names = append(names, name)
		}
		slices.Sort(names)
		o.fail(fmt.Errorf("%w: %q", errUnknownField, o.at(names[0])))
	}
	return *o.err
}

// kind is the JSON type of a valid JSON value.
func kind(raw jsontext.Value) string {
	switch raw.Kind() {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func wrongType(path string, raw jsontext.Value, want string) error {
	got := kind(raw)
	if got == "number" {
		got = "number " + string(raw)
	}
	return fmt.Errorf("%w: %s: got %s, want %s", errWrongType, path, got, want)
}

// readObject reads the body of an endpoint that takes an object (readBody)
// and parses it with the general parser (parseObject); an absent body is
// the empty object.
func (s *server) readObject(w http.ResponseWriter, r *http.Request) (*object, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	return parseObject(body)
}

// readEmptyBody reads the body of an endpoint that takes none: absent, or
// the empty object. Anything else is the same problem any body gets.
func (s *server) readEmptyBody(w http.ResponseWriter, r *http.Request) error {
	o, err := s.readObject(w, r)
	if err != nil {
		return err
	}
	return o.close()
}
