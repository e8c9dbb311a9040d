-- pool_put.lua: create a pool or update the fields given.
--
-- KEYS: the pool's keys (lib.lua).
-- A: 1 nowMs, 2 retentionMs, 3 call token, 4 strategy, 5 slowStart ms;
--   '' keeps the field (or takes the default: waterfill, 0); 6 the version
--   of the Scales a ring was built for in steps (ring_build.lua), '' none;
--   7 the most Scales whose ring this call may build itself; 8
--   heartbeatTimeout ms, 9 onLapse, 10 maxFails, 11 failWindow ms, 12
--   ejectTime ms ('' keeps the option; health.lua names their meta fields).
-- Reply: {created (1 or 0), strategy, slowStart ms, createdAt ms, Scales,
--   ht, ls, ol, mf, fw, et (false where absent)}.
--   Errors: DISPATCH RINGSTALE (changing nothing): the ring built in steps
--   is not ready and the pool has more Scales than A[7].
--
-- Changing the strategy deletes the strategy's state (strat) and the ring,
-- and builds the ring anew for consistent-hash (ring.lua), unless a ring
-- built in steps is ready for the pool's Scales.

local function poolPut(A)
  local now, ret, tok = tonumber(A[1]), tonumber(A[2]), A[3]
  local created = 0
  if A[4] == HASHED and redis.call('HGET', K.meta, 's') ~= HASHED and not ringReady(A[6] or '')
      and redis.call('HLEN', K.scales) > (tonumber(A[7]) or 0) then
    return fail('RINGSTALE')
  end
  if not poolExists() then
    created = 1
    redis.call('DEL', K.gone)
    redis.call('HSET', K.meta, 's', 'waterfill', 'ss', '0', 'c', fmt(now), 'u', '0', 'r', '0', 'lv', LAYOUT)
  end
  if A[4] ~= '' and redis.call('HGET', K.meta, 's') ~= A[4] then
    redis.call('HSET', K.meta, 's', A[4])
    redis.call('UNLINK', K.strat)
    ringReset(A[4], A[6] or '')
  end
  if A[5] ~= '' then redis.call('HSET', K.meta, 'ss', A[5]) end
  -- The health options (health.lua): heartbeats turned on start every
  -- Scale's lease now (leasesSince, dispatch.HealthOptions.Apply). Nothing is
  -- settled here: the next calls settle the Scales a change makes due.
  local ht = A[8] or ''
  if ht ~= '' then
    if (tonumber(redis.call('HGET', K.meta, 'ht')) or 0) == 0 and tonumber(ht) > 0 then
      redis.call('HSET', K.meta, 'ls', fmt(now))
      -- Scales registered by a build before health have no lease yet: they
      -- join the index once, as never heartbeated (lastHeartbeat 0).
      if redis.call('ZCARD', K.lease) + redis.call('ZCARD', K.lapsed) < redis.call('HLEN', K.scales) then
        local add = {}
        for _, id in ipairs(redis.call('HKEYS', K.scales)) do
          if not redis.call('ZSCORE', K.lapsed, id) then add[#add + 1] = 0; add[#add + 1] = id end
        end
        for i = 1, #add, WRITE do
          redis.call('ZADD', K.lease, 'NX', unpack(add, i, math.min(i + WRITE - 1, #add)))
        end
      end
    end
    redis.call('HSET', K.meta, 'ht', ht)
  end
  for i, f in ipairs({'ol', 'mf', 'fw', 'et'}) do
    local v = A[8 + i] or ''
    if v ~= '' then redis.call('HSET', K.meta, f, v) end
  end

  local prior = callGet(tok)
  if prior then created = tonumber(prior) else callPut(tok, fmt(created)) end
  sweep(now, ret)
  local m = redis.call('HMGET', K.meta, 's', 'ss', 'c', 'ht', 'ls', 'ol', 'mf', 'fw', 'et')
  return {created, m[1], m[2], m[3], redis.call('HLEN', K.scales), m[4], m[5], m[6], m[7], m[8], m[9]}
end
