-- pool_put.lua: create a pool or update the fields given.
--
-- KEYS: the pool's keys (lib.lua).
-- ARGV: 1 nowMs, 2 retentionMs, 3 call token, 4 strategy, 5 slowStart ms;
--   '' keeps the field (or takes the default: waterfill, 0); 6 the version
--   of the Scales a ring was built for in steps (ring_build.lua), '' none;
--   7 the most Scales whose ring this call may build itself.
-- Reply: {created (1 or 0), strategy, slowStart ms, createdAt ms, Scales}.
--   Errors: DISPATCH RINGSTALE (changing nothing): the ring built in steps
--   is not ready and the pool has more Scales than ARGV 7.
--
-- Changing the strategy deletes the strategy's state (strat) and the ring,
-- and builds the ring anew for consistent-hash (ring.lua), unless a ring
-- built in steps is ready for the pool's Scales.

local now, ret, tok = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local created = 0
if ARGV[4] == HASHED and redis.call('HGET', K.meta, 's') ~= HASHED and not ringReady(ARGV[6] or '')
    and redis.call('HLEN', K.scales) > (tonumber(ARGV[7]) or 0) then
  return fail('RINGSTALE')
end
if not poolExists() then
  created = 1
  redis.call('DEL', K.gone)
  redis.call('HSET', K.meta, 's', 'waterfill', 'ss', '0', 'c', fmt(now), 'u', '0', 'r', '0', 'lv', LAYOUT)
end
if ARGV[4] ~= '' and redis.call('HGET', K.meta, 's') ~= ARGV[4] then
  redis.call('HSET', K.meta, 's', ARGV[4])
  redis.call('UNLINK', K.strat)
  ringReset(ARGV[4], ARGV[6] or '')
end
if ARGV[5] ~= '' then redis.call('HSET', K.meta, 'ss', ARGV[5]) end

local prior = callGet(tok)
if prior then created = tonumber(prior) else callPut(tok, fmt(created)) end
sweep(now, ret)
local m = redis.call('HMGET', K.meta, 's', 'ss', 'c')
return {created, m[1], m[2], m[3], redis.call('HLEN', K.scales)}
