package redis

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// Every call of the store runs a function of one Redis Functions library:
// FUNCTION LOAD runs the library's top level (its definitions) once, where
// EVALSHA would run it on every call; a single-order dispatch costs Redis
// 8–31 % less (docs/benchmarks.md). The library's name and its functions'
// names carry a hash of its source, so that replicas of two versions share
// a Redis during an upgrade; an older version's library stays until
// removed (docs/operations.md).

// function is one function of the library: name, as the metrics show it,
// calls the Lua function lua (defined by the file of the same name, which
// lists its keys and arguments).
type function struct {
	name string
	lua  string
	// readOnly functions change nothing: they are flagged no-writes and
	// called with FCALL_RO, so that a Cluster may serve them from a
	// replica and Redis runs them at maxmemory.
	readOnly bool
	// flags are more Redis function flags (allow-oom).
	flags []string
	// args name the function's arguments in the order the call passes
	// them: the Lua reads argument a as A[NAME.a], NAME the function's
	// name in capitals (the preamble's tables). The last may be the first
	// of a variable tail.
	args []string
	// keys are the keys of its pool that the function uses (keys.go), in
	// poolKeys order and in the order the call passes them, keyCall last
	// for a function that keeps its reply under a call token (callToken).
	// The Lua names them K.<name>; TestFunctionKeys checks that they are
	// the keys its code reaches.
	keys  []string
	fcall string // the name it is registered under, with the version
	index int    // its place in the library's functions (heads.go)
}

// The functions. Their Lua side is in the files of libFiles; each call
// passes the keys in the order of keys and the arguments in the order of
// args.
var (
	// A dispatch passes its order ids as one run and their keys as a
	// second only when an order has one, and what is the same call after
	// call as one settings string (lua/dispatch.lua's header, batches.go's
	// dispatchArgs): a single order passes 6 arguments.
	fnDispatch = &function{name: "dispatch", lua: "dispatchOne", args: []string{"batchId", "now", "settings", "idem", "rand", "orders"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig, keyOrders, keyOexp,
			keyBexp, keyStrat, keyTmp, keyLex, keyRing, keyIexp, keyLease, keyLapsed, keyEjq, keyLapq, keyJournal}}
	fnDispatchMany = &function{name: "dispatch_many", lua: "dispatchMany", args: []string{"m", "batches"},
		keys: fnDispatch.keys}
	fnPoolPut = &function{name: "pool_put", lua: "poolPut", args: []string{"now", "retention", "token",
		"strategy", "slowStart", "ringVersion", "ringMax",
		"heartbeatTimeout", "onLapse", "maxFails", "failWindow", "ejectTime"},
		keys: []string{keyMeta, keyScales, keyOrders, keyOexp, keyBexp, keyStrat, keyGone,
			keyRing, keyIexp, keyLease, keyLapsed, keyCall}}
	// Deleting a pool frees memory: it runs at maxmemory too.
	fnPoolDel = &function{name: "pool_del", lua: "poolDel", flags: []string{"allow-oom"}, args: []string{"token"},
		keys: poolKeys}
	fnRingBuild = &function{name: "ring_build", lua: "ringBuild", args: []string{"step", "version", "scales"},
		keys: []string{keyMeta, keyScales, keyRing}}
	fnScalePut = &function{name: "scale_put", lua: "scalePut", args: []string{"compId", "now", "retention", "token",
		"weight", "state", "maxOrders", "orderCount", "maxScales"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig, keyOrders, keyOexp, keyBexp,
			keyLex, keyRing, keyIexp, keyLease, keyLapsed, keyEjq, keyLapq, keyCall}}
	fnScaleDel = &function{name: "scale_del", lua: "scaleDel", args: []string{"compId", "now", "retention", "token", "force"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig, keyOrders, keyOexp,
			keyBexp, keyLex, keyRing, keyIexp, keyLease, keyLapsed, keyEjq, keyLapq, keyCall}}
	fnFinish = &function{name: "finish", lua: "finish", args: []string{"mode", "now", "retention", "token", "orders"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig, keyOrders, keyOexp,
			keyBexp, keyLex, keyIexp, keyLease, keyLapsed, keyEjq, keyLapq, keyCall}}
	fnReassign = &function{name: "reassign", lua: "reassign", args: []string{"compId", "now", "retention", "maxCost", "token", "rand"},
		keys: append(slices.Clone(fnDispatch.keys), keyCall)}
	fnFail = &function{name: "fail", lua: "failReport", args: []string{"orderId", "compId", "now", "retention", "maxCost", "token", "rand"},
		keys: append(slices.Clone(fnDispatch.keys), keyCall)}
	fnTick = &function{name: "tick", lua: "tick", args: []string{"now", "retention", "limit", "maxCost", "rand"},
		keys: fnDispatch.keys}
	fnHeartbeat = &function{name: "heartbeat", lua: "heartbeat", args: []string{"compId", "now", "retention", "orderCount"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig, keyOrders, keyOexp, keyBexp,
			keyLex, keyIexp, keyLease, keyLapsed, keyEjq, keyLapq, keyJournal}}
	fnRead = &function{name: "read", lua: "readOne", readOnly: true, args: []string{"what", "id", "now", "retention"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig, keyOrders}}
	fnScalesList = &function{name: "scales_list", lua: "scalesList", readOnly: true, args: []string{"limit", "count", "after"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig}}
	fnScaleOrders = &function{name: "scale_orders", lua: "scaleOrders", readOnly: true,
		args: []string{"compId", "limit", "chunk", "moves", "after", "prev", "next", "far", "own"},
		keys: []string{keyMeta, keyScales, keyOrders}}
	fnWatch = &function{name: "watch", lua: "watch", readOnly: true, args: []string{"edge", "buckets"},
		keys: []string{keyMeta, keyScales, keyLoad, keyElig}}
)

// libFiles are the library's files in the order it joins them: each file
// may use what the files before it define.
var libFiles = []string{
	"lib.lua", "records.lua", "own.lua", "waterfill.lua", "ring.lua", "pickers.lua", "assign.lua", "health.lua",
	"dispatch.lua", "dispatch_many.lua",
	"pool_put.lua", "pool_del.lua", "ring_build.lua", "scale_put.lua", "scale_del.lua",
	"ranked.lua", "scales_list.lua", "finish.lua", "reassign.lua", "fail.lua", "tick.lua", "heartbeat.lua",
	"scale_orders.lua", "read.lua", "watch.lua",
	"functions.lua",
}

// lib is the store's library.
var lib = newLibrary(libFiles, []*function{
	fnDispatch, fnDispatchMany, fnPoolPut, fnPoolDel, fnRingBuild, fnScalePut, fnScaleDel,
	fnFinish, fnReassign, fnFail, fnTick, fnHeartbeat, fnRead, fnScalesList, fnScaleOrders, fnWatch,
})

// redisFlags are the flags fn is registered with.
func (fn *function) redisFlags() []string {
	if fn.readOnly {
		return append([]string{"no-writes"}, fn.flags...)
	}
	return fn.flags
}

// library is a Lua library for FUNCTION LOAD.
type library struct {
	version string // the hash in its names
	code    string
	fns     []*function
}

// newLibrary joins the preamble (preamble.go) and files and registers fns
// (functions.lua's register), naming each after the library's version.
func newLibrary(files []string, fns []*function) *library {
	var b strings.Builder
	b.WriteString(preamble(fns))
	for _, f := range files {
		src, err := luaFiles.ReadFile("lua/" + f)
		if err != nil {
			panic("redis: missing Lua file " + f)
		}
		b.Write(src)
		b.WriteByte('\n')
	}
	b.WriteString("\n-- The functions (functions.go).\n")
	for _, fn := range fns {
		b.WriteString("register('" + fn.name + "', ENTRY." + fn.lua + ", {")
		for i, f := range fn.redisFlags() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("'" + f + "'")
		}
		b.WriteString("})\n")
	}
	src := b.String()
	h := sha1.Sum([]byte(src))
	v := hex.EncodeToString(h[:6])
	for i, fn := range fns {
		fn.fcall = fn.name + "_" + v
		fn.index = i
	}
	return &library{
		version: v,
		code:    "#!lua name=dispatcher_" + v + "\nlocal VERSION = '" + v + "'\n" + src,
		fns:     fns,
	}
}

// call runs function fn on its keys of pool. Every call of the Store goes
// this way (or through callToken).
func (s *Store) call(ctx context.Context, fn *function, pool string, args ...any) (any, error) {
	return s.fcall(ctx, fn, pool, "", args)
}

// callToken runs a mutating function whose reply a second run could not
// recompute, under call token tok (also among args, where the function
// takes it): the function keeps its reply under the call's key for as
// long as the token says (callToken, lib.lua's callPut), so that a run
// go-redis re-sends answers as the first did. A call without a token ("")
// keeps nothing and needs no such key.
func (s *Store) callToken(ctx context.Context, fn *function, pool, tok string, args ...any) (any, error) {
	return s.fcall(ctx, fn, pool, tok, args)
}

// fcall runs fn on its keys of pool with args.
func (s *Store) fcall(ctx context.Context, fn *function, pool, tok string, args []any) (any, error) {
	ph := s.heads.of(pool)
	return s.send(ctx, ph, append(ph.start(fn, pool, tok, len(args)), args...))
}

// send runs cmd, an FCALL (or FCALL_RO for a function that changes
// nothing) that ph.start began, loading the library first where Redis
// does not have it (a new or restarted server, a node that joined a
// Cluster). Its reply goes through answered (wait.go): what a read saw may
// be a write a failover would undo.
func (s *Store) send(ctx context.Context, ph *poolHeads, cmd []any) (any, error) {
	v, err := s.c.Do(ctx, cmd...).Result()
	if isNoFunction(err) {
		if err := s.loadLibrary(ctx, lib); err != nil {
			return nil, err
		}
		v, err = s.c.Do(ctx, cmd...).Result()
	}
	return s.answered(ctx, ph.meta, v, err)
}

// loadLibrary loads l into Redis: into every primary of a Cluster, since a
// call redirected by ASK during a slot's migration may land on any of them.
func (s *Store) loadLibrary(ctx context.Context, l *library) error {
	load := func(ctx context.Context, c interface {
		FunctionLoad(context.Context, string) *goredis.StringCmd
	}) error {
		if err := c.FunctionLoad(ctx, l.code).Err(); err != nil && !isLibraryLoaded(err) {
			return err
		}
		return nil
	}
	if cc, ok := s.c.(interface {
		ForEachMaster(context.Context, func(context.Context, *goredis.Client) error) error
	}); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error { return load(ctx, c) })
	}
	return load(ctx, s.c)
}

// isNoFunction reports whether err is Redis's answer to an FCALL of a
// function it does not have.
func isNoFunction(err error) bool {
	msg, ok := replyText(err)
	return ok && strings.Contains(msg, "Function not found")
}

// isLibraryLoaded reports whether err is FUNCTION LOAD's answer for a
// library that another replica has loaded meanwhile.
func isLibraryLoaded(err error) bool {
	msg, ok := replyText(err)
	return ok && strings.Contains(msg, "already exists")
}
