-- pool_put.lua: create a pool or update the fields given.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (POOL_PUT): now ms, retention ms, the call's token, strategy,
--   slowStart ms ('' keeps the field, or takes the default: waterfill, 0);
--   ringVersion, the version of the Scales a ring was built for in steps
--   (ring_build.lua), '' none; ringMax, the most Scales whose ring this
--   call may build itself; heartbeatTimeout ms, onLapse, maxFails,
--   failWindow ms, ejectTime ms ('' keeps the option; keys.go names their
--   meta fields).
-- Reply: {created (1 or 0), strategy, slowStart ms, createdAt ms, Scales,
--   ht, ls, ol, mf, fw, et (false where absent)}.
--   Errors: DISPATCH RINGSTALE (changing nothing): the ring built in steps
--   is not ready and the pool has more Scales than ringMax.
--
-- Changing the strategy deletes the strategy's state (strat) and the ring,
-- and builds the ring anew for consistent-hash (ring.lua), unless a ring
-- built in steps is ready for the pool's Scales.

function ENTRY.poolPut(A)
  local P = POOL_PUT
  local now, ret, tok = tonumber(A[P.now]), tonumber(A[P.retention]), A[P.token]
  local strategy, ringVersion = A[P.strategy], A[P.ringVersion] or ''
  local created = 0
  if strategy == HASHED and redis.call('HGET', K.meta, 's') ~= HASHED and not ringReady(ringVersion)
      and redis.call('HLEN', K.scales) > (tonumber(A[P.ringMax]) or 0) then
    return fail('RINGSTALE')
  end
  if not poolExists() then
    created = 1
    redis.call('DEL', K.gone)
    redis.call('HSET', K.meta, 's', DEFAULTSTRATEGY, 'ss', '0', 'c', fmt(now), 'u', '0', 'r', '0', 'lv', LAYOUT)
  end
  if strategy ~= '' and redis.call('HGET', K.meta, 's') ~= strategy then
    redis.call('HSET', K.meta, 's', strategy)
    redis.call('UNLINK', K.strat)
    ringReset(strategy, ringVersion)
  end
  if A[P.slowStart] ~= '' then redis.call('HSET', K.meta, 'ss', A[P.slowStart]) end
  -- The health options (health.lua): heartbeats turned on start every
  -- Scale's lease now (leasesSince, dispatch.HealthOptions.Apply). Nothing is
  -- settled here: the next calls settle the Scales a change makes due.
  local ht = A[P.heartbeatTimeout] or ''
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
    redis.call('HDEL', K.meta, 'hd') -- (health.lua's settleCached)
  end
  local function given(a) return (A[a] or '') ~= '' end
  if given(P.onLapse) then redis.call('HSET', K.meta, 'ol', A[P.onLapse]) end
  if given(P.maxFails) then redis.call('HSET', K.meta, 'mf', A[P.maxFails]) end
  if given(P.failWindow) then redis.call('HSET', K.meta, 'fw', A[P.failWindow]) end
  if given(P.ejectTime) then redis.call('HSET', K.meta, 'et', A[P.ejectTime]) end

  local prior = callGet(tok)
  if prior then created = tonumber(prior) else callPut(tok, fmt(created)) end
  sweep(now, ret)
  local m = redis.call('HMGET', K.meta, unpack(POOLFIELDS))
  return {created, m[1], m[2], m[3], redis.call('HLEN', K.scales), m[4], m[5], m[6], m[7], m[8], m[9]}
end
