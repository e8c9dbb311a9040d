package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// The dispatch path runs as Redis Functions: FUNCTION LOAD runs the
// library's top level (its ~70 definitions) once, where EVALSHA would run
// it on every call; a single-order dispatch costs Redis 8–31 % less
// (docs/benchmarks.md). The library's name and its functions' names carry
// a hash of its source, so that replicas of two versions share a Redis
// during an upgrade; an older version's library stays until removed
// (docs/operations.md).
var (
	dispatchLib        = newLibrary("waterfill.lua", "ring.lua", "pickers.lua", "assign.lua", "health.lua", "dispatch.lua", "dispatch_many.lua")
	fnDispatch         = dispatchLib.function("dispatch")
	fnDispatchMany     = dispatchLib.function("dispatch_many")
	functionScriptName = map[string]string{fnDispatch: "dispatch", fnDispatchMany: "dispatch_many"}
)

// library is a Lua library for FUNCTION LOAD: lib.lua, own.lua, the files
// given and functions.lua.
type library struct {
	version string // the hash in its names
	code    string
}

func newLibrary(files ...string) *library {
	src := luaSource("", append(files, "functions.lua")...)
	h := sha1.Sum([]byte(src))
	v := hex.EncodeToString(h[:6])
	return &library{version: v, code: "#!lua name=dispatcher_" + v + "\n" + strings.ReplaceAll(src, "@V", v)}
}

// function returns the name under which the library registers name.
func (l *library) function(name string) string { return name + "_" + l.version }

// call runs function fn of dispatchLib on the keys of pool, loading the
// library first where Redis does not have it (a new or restarted server,
// a node that joined a Cluster). Its reply goes through answered
// (wait.go), as every script call's.
func (s *Store) call(ctx context.Context, fn, pool string, args ...any) (any, error) {
	keys := keysOf(pool)
	v, err := s.c.FCall(ctx, fn, keys, args...).Result()
	if isNoFunction(err) {
		if err := s.loadLibrary(ctx, dispatchLib); err != nil {
			return nil, err
		}
		v, err = s.c.FCall(ctx, fn, keys, args...).Result()
	}
	return s.answered(ctx, keys[0], v, err)
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
