// Package e2e drives the Go client (module ./client) and dispatchctl
// against the real service: the api over real HTTP on the memory store and
// on a real redis-server. It has no code of its own; its tests import the
// client through the repository's go.work.
package e2e
