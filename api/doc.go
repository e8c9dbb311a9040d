// Package api is the HTTP interface of the dispatcher: the v1 JSON API of
// DESIGN §4 over a [dispatch.Service], as described by openapi.yaml.
//
// [New] returns an http.Handler built on chi. Requests are decoded strictly
// (unknown fields, trailing data, nulls and wrong types are rejected), every
// error is answered as application/problem+json (RFC 9457) with a type
// urn:dispatcher:problem:<slug>, and each request is logged once with its
// request id. The package depends on chi and dispatch only.
package api
