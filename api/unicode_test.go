package api_test

import (
	"net/http"
	"testing"
)

// TestKeysKeepTheirCharacters: keys outside ASCII, written raw or as
// escapes (a surrogate pair included), come back as the characters sent,
// and a literal U+FFFD is a character like any other.
func TestKeysKeepTheirCharacters(t *testing.T) {
	e := newEnv(t)
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p", "")
	e.must(t, http.StatusCreated, nil, "PUT", "/v1/pools/p/scales/S1", "")
	cases := []struct{ id, json, want string }{
		{"raw", `"ключ-é"`, "ключ-é"},
		{"pair", `"\ud83d\ude00 x"`, "\U0001F600 x"},
		{"escaped-backslash-u", `"\\ud800"`, `\ud800`},
		{"replacement-raw", `"a` + "\uFFFD" + `"`, "a\uFFFD"},
		{"replacement-escape", `"a\ufffd"`, "a\uFFFD"},
	}
	for _, c := range cases {
		e.must(t, http.StatusCreated, nil, "POST", "/v1/pools/p/batches", `{"orders":[{"id":"`+c.id+`","key":`+c.json+`}]}`)
		var o orderBody
		e.must(t, http.StatusOK, &o, "GET", "/v1/pools/p/orders/"+c.id, "")
		if o.Key == nil || *o.Key != c.want {
			t.Errorf("%s: key %v, want %q", c.id, o.Key, c.want)
		}
	}
}
