package loadtest

import "sync/atomic"

// Targets is a list of replicas that a test changes while a load runs, as
// a load balancer drops a replica it found dead; its Get is a
// Spec.Targets.
type Targets struct{ p atomic.Pointer[[]string] }

// NewTargets returns the list urls.
func NewTargets(urls ...string) *Targets {
	t := &Targets{}
	t.Set(urls...)
	return t
}

// Get returns the list as it is now.
func (t *Targets) Get() []string { return *t.p.Load() }

// Set sends the next attempts to urls.
func (t *Targets) Set(urls ...string) { t.p.Store(&urls) }
