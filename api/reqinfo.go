package api

import (
	"context"
	"net/http"
)

// requestInfo is what the middlewares learn about a request that the
// access log (observe) reports once the request is answered: the token's
// name, and why the request was refused, if it was.
type requestInfo struct {
	token  *Token
	denied string
}

type infoKey struct{}

// withInfo returns r carrying a fresh requestInfo, and that info.
func withInfo(r *http.Request) (*http.Request, *requestInfo) {
	info := &requestInfo{}
	return r.WithContext(context.WithValue(r.Context(), infoKey{}, info)), info
}

// infoOf returns the requestInfo of r; a throwaway one when r has none
// (a handler called without observe, as some tests do).
func infoOf(r *http.Request) *requestInfo {
	if info, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return info
	}
	return &requestInfo{}
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
