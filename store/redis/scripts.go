package redis

import (
	"context"
	"embed"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The scripts, each lua/lib.lua and lua/own.lua followed by the files it
// needs.
var (
	scriptPoolPut     = loadScript("ring.lua", "pool_put.lua")
	scriptPoolDel     = loadScript("pool_del.lua")
	scriptRingBuild   = loadScript("ring.lua", "ring_build.lua")
	scriptScalePut    = loadScript("ring.lua", "scale_put.lua")
	scriptScaleDel    = loadScript("ring.lua", "scale_del.lua")
	scriptScalesList  = loadScript("scales_list.lua")
	scriptFinish      = loadScript("finish.lua")
	scriptReassign    = loadScript("waterfill.lua", "ring.lua", "pickers.lua", "assign.lua", "health.lua", "reassign.lua")
	scriptFail        = loadScript("waterfill.lua", "ring.lua", "pickers.lua", "assign.lua", "health.lua", "fail.lua")
	scriptTick        = loadScript("waterfill.lua", "ring.lua", "pickers.lua", "assign.lua", "health.lua", "tick.lua")
	scriptHeartbeat   = loadScript("health.lua", "heartbeat.lua")
	scriptScaleOrders = loadScript("scale_orders.lua")
	scriptRead        = loadScript("read.lua")
	scriptWatch       = loadScript("watch.lua")
)

// loadScript makes a script, which binds its keys (lib.lua's enter) as it
// starts.
func loadScript(files ...string) *goredis.Script {
	return goredis.NewScript(luaSource("enter(KEYS)\n", files...))
}

// luaSource joins lib.lua, then afterLib, then own.lua and files.
func luaSource(afterLib string, files ...string) string {
	var b strings.Builder
	for _, f := range append([]string{"lib.lua", "own.lua"}, files...) {
		src, err := luaFiles.ReadFile("lua/" + f)
		if err != nil {
			panic("redis: missing script " + f)
		}
		b.Write(src)
		b.WriteByte('\n')
		if f == "lib.lua" {
			b.WriteString(afterLib)
		}
	}
	return b.String()
}

// run runs a mutating script on the keys of pool. Like every script call
// of the Store, its reply goes through answered (wait.go).
func (s *Store) run(ctx context.Context, sc *goredis.Script, pool string, args ...any) (any, error) {
	keys := keysOf(pool)
	v, err := sc.Run(ctx, s.c, keys, args...).Result()
	return s.answered(ctx, keys[0], v, err)
}

// runCall runs a mutating script whose reply a second run could not
// recompute, under call token tok (also among args, where the script
// takes it): the script keeps its reply under the call's key for as long
// as the token says (callToken, lib.lua's callPut), so that a run go-redis
// re-sends answers as the first did.
// A call without a token ("") keeps nothing and needs no such key.
func (s *Store) runCall(ctx context.Context, sc *goredis.Script, pool, tok string, args ...any) (any, error) {
	if tok == "" {
		return s.run(ctx, sc, pool, args...)
	}
	keys := append(keysOf(pool), callKey(pool, tok))
	v, err := sc.Run(ctx, s.c, keys, args...).Result()
	return s.answered(ctx, keys[0], v, err)
}

// read runs a script that changes nothing (EVALSHA_RO) on the keys of
// pool. What it read may be a write a failover would undo: its reply goes
// through answered too.
func (s *Store) read(ctx context.Context, sc *goredis.Script, pool string, args ...any) (any, error) {
	keys := keysOf(pool)
	v, err := sc.RunRO(ctx, s.c, keys, args...).Result()
	return s.answered(ctx, keys[0], v, err)
}
