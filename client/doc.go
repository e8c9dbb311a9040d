// Package client is the Go client of the dispatcher HTTP API (openapi.yaml
// at the repository root). It depends on the standard library only.
//
// Every operation of the API is a method of [Client] that takes a
// [context.Context] first. Lists are iterators ([iter.Seq2]) that fetch page
// after page. Errors that the service answers are [*Error] values carrying
// the RFC 9457 problem; compare them with [errors.Is] against the sentinel
// errors (ErrPoolNotFound, …) or take them apart with [errors.As].
//
// [Client.Dispatch] always sends an Idempotency-Key (it makes one when the
// caller gives none) and retries transport errors, 429 and 503 with capped,
// jittered exponential backoff that honours Retry-After and the context:
// a retry repeats the request byte for byte with the same key, so the
// service answers the batch it applied first and never applies it twice.
// The other operations retry the same way where a repeat is harmless (reads,
// PUTs, complete, cancel, reassign); deletes and bulk completions retry only
// answers that say nothing was applied (429, 503 unavailable).
package client
