// Package api is the HTTP interface of the dispatcher: the v1 JSON API of
// DESIGN §4 over a [dispatch.Service], as described by openapi.yaml.
//
// [New] returns an http.Handler built on chi. Requests are decoded strictly
// (unknown fields, trailing data, nulls and wrong types are rejected), every
// error is answered as application/problem+json (RFC 9457) with a type
// urn:dispatcher:problem:<slug>, and each request is logged once with its
// request id.
//
// Routes are grouped by role: probes and the contract are open; reading,
// dispatching, completing and cancelling need a client or admin bearer
// token; changing pools and Scales, and GET /metrics, an admin token
// (Options.AdminTokens, Options.ClientTokens; none at all runs open).
// Tokens of a [TokenSet] (Options.Tokens, DESIGN §11) may be scoped to
// pools — a pool outside a token's patterns is answered exactly as one
// that does not exist — and held to a rate by a [Limiter]. Each
// request has a deadline (Options.RequestTimeout) that bounds its store
// calls, and is counted in the Prometheus metrics of [Metrics]. The package
// depends on chi, the Prometheus client and dispatch only.
package api
