// Package store groups the implementations of [dispatch.Store] and the suite
// that checks them.
//
// store/memory keeps every pool in the process, for a single replica without
// Redis; store/redis keeps them in Redis so that any number of replicas share
// them. Both must behave alike, call for call: store/storetest is the
// conformance suite that each store's tests run, and the referee when they
// disagree.
//
// [dispatch.Store]: https://pkg.go.dev/github.com/dispatcher/dispatcher/dispatch#Store
package store
