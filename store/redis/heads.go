package redis

import (
	"sync"
	"sync/atomic"
)

// maxHeadPools is how many pools' call heads a Store keeps (heads): past
// it, it forgets them all and builds them again as calls come.
const maxHeadPools = 1024

// heads holds, per pool, the head of each function's FCALL: the command
// (FCALL or FCALL_RO), the function's registered name, a place for the
// number of keys and the function's keys of the pool, each boxed for
// go-redis once. A call copies its head and appends its arguments, so
// that it builds no key name and boxes no key (a dispatch passes 18). A
// pool's key names never change, so a head is never stale, whether the
// pool is deleted and made again or not.
type heads struct {
	pools sync.Map // pool name → *poolHeads
	n     atomic.Int64
}

// poolHeads are the heads of one pool, by function (function.index), and
// its meta key, by which answered finds the pool's primary; and whether
// the pool's strategy draws random numbers, as the last reply that named
// it said (false until one does: waterfill, the default, draws none).
type poolHeads struct {
	meta  string
	byFun [][]any
	draws atomic.Bool
}

// learn records what a reply said of the pool's strategy: whether it
// draws (drawsRandom). It writes only a change, so that the replicas'
// dispatches of one pool do not contend for the line.
func (ph *poolHeads) learn(strategy string) {
	if d := drawsRandom(strategy); ph.draws.Load() != d {
		ph.draws.Store(d)
	}
}

// of returns the heads of pool's calls.
func (h *heads) of(pool string) *poolHeads {
	if v, ok := h.pools.Load(pool); ok {
		return v.(*poolHeads)
	}
	if h.n.Add(1) > maxHeadPools {
		h.pools.Clear()
		h.n.Store(1)
	}
	v, _ := h.pools.LoadOrStore(pool, newPoolHeads(pool, lib.fns))
	return v.(*poolHeads)
}

// newPoolHeads builds the heads of pool's calls of fns.
func newPoolHeads(pool string, fns []*function) *poolHeads {
	p := poolPrefix(pool)
	boxed := make(map[string]any, len(poolKeys))
	for _, k := range poolKeys {
		boxed[k] = p + k
	}
	ph := &poolHeads{meta: p + keyMeta, byFun: make([][]any, len(fns))}
	for i, fn := range fns {
		cmd := "fcall"
		if fn.readOnly {
			cmd = "fcall_ro"
		}
		head := make([]any, 3, 3+len(fn.keys))
		head[0], head[1], head[2] = cmd, fn.fcall, 0
		for _, k := range fn.keys {
			if k != keyCall {
				head = append(head, boxed[k])
			}
		}
		ph.byFun[i] = head
	}
	return ph
}

// start returns the FCALL of fn on pool under call token tok ("" for
// none), with room for n arguments, which the caller appends: fn's head
// and, for a function that keeps its reply (callToken), the call key of
// tok.
func (ph *poolHeads) start(fn *function, pool, tok string, n int) []any {
	head := ph.byFun[fn.index]
	cmd := make([]any, len(head), len(head)+1+n)
	copy(cmd, head)
	if tok != "" {
		cmd = append(cmd, callKey(pool, tok))
	}
	cmd[2] = len(cmd) - 3
	return cmd
}
