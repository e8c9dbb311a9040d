package api

import (
	"net/http"
)

// requestInfo is what the middlewares learn about a request that the
// access log (observe) reports once the request is answered: the token's
// name, and why the request was refused, if it was.
type requestInfo struct {
	token  *Token
	denied string
}

// reqState is what front puts in a request's context: its id and its
// requestInfo.
type reqState struct {
	id   string
	info requestInfo
	// w and idHeader are front's, kept here to be allocated with the rest.
	w        statusWriter
	idHeader [1]string
}

type stateKey struct{}

// stateOf returns the reqState of r, nil when r has none (a handler called
// without front, as some tests do).
func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	return st
}

// infoOf returns the requestInfo of r; a throwaway one when r has none.
func infoOf(r *http.Request) *requestInfo {
	if st := stateOf(r); st != nil {
		return &st.info
	}
	return &requestInfo{}
}

// requestIDOf returns the id front gave r, "" when it has none.
func requestIDOf(r *http.Request) string {
	if st := stateOf(r); st != nil {
		return st.id
	}
	return ""
}

// deny records that the request of the token named name ("" for no known
// token) was refused for reason, in the info and the metrics.
func (i *requestInfo) deny(s *server, name, reason string) {
	i.denied = reason
	s.metrics.auth.denied(name, reason)
}

// tokenName returns the name of the request's token, "" without one.
func (i *requestInfo) tokenName() string {
	if i.token == nil {
		return ""
	}
	return i.token.Name
}

// headerOf is h.Get(key) for a key in canonical form (http.CanonicalHeaderKey),
// as net/http keeps a request's header names: without canonicalizing key
// again on every request.
func headerOf(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}
