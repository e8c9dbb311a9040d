-- tick.lua: one bounded share of a pool's health work (dispatch.TickRequest).
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (TICK): now ms, retention ms, limit, maxCost (the cost cap, as
--   dispatch.lua), rand: the random numbers, two per order that may move
--   (lib.lua's randPair; '' none).
-- Reply: {more (1/0; 2: more, and the move waits for the random numbers
--   that a strategy that draws, RANDOM, needs and the call did not send),
--   unsettled, dropped, k, k changes "compId|from|to|atMs", then triples
--   orderId, from, to of the orders moved}. Errors: DISPATCH NOPOOL.
--
-- In this order: it settles at most limit due Scales; with onLapse
-- reassign it moves the oldest orders of the lapsed Scale with orders whose
-- compId is lowest (lapq), at most limit and no more than the eligible
-- Scales have room for, as reassign.lua would move them; it takes at most
-- limit changes from the front of the journal. Each call is atomic: several
-- replicas may tick one pool at once, and an order leaves the lapsed Scale's
-- own index as it moves, so no order moves twice. A call that go-redis
-- re-sends does one more share, which is as harmless; only the changes of
-- a lost reply go unreported.
--
-- A call's work is bounded by limit: the settling reads limit Scales, the
-- move reads the chunks that hold the orders it takes (own.lua's ownFront;
-- a token it takes from, its batch's assignments too) and costs what a batch of them costs, for the strategies that read every
-- Scale per order cut to cost cap / eligible Scales.

function ENTRY.tick(A)
  local P = TICK
  local now, ret, limit, maxCost = tonumber(A[P.now]), tonumber(A[P.retention]), tonumber(A[P.limit]),
    tonumber(A[P.maxCost])
  if not poolExists() then return fail('NOPOOL') end
  local o = healthOpts()

  local settled = settleDue(now, o, limit)
  local more = settled == limit and anyDue(now, o)

  local moves, norand = {}, false
  local from = o.ol == 'reassign' and redis.call('ZRANGE', K.lapq, 0, 0)[1]
  local src = from and getScale(from)
  if from and (not src or src.h ~= 'l' or src.out <= 0) then
    -- (healthIndex keeps lapq exact; an entry that is not is dropped)
    redis.call('ZREM', K.lapq, from)
    src = nil
  end
  if src then
    local meta = redis.call('HMGET', K.meta, 's', 'u', 'r')
    local strategy, unlimited, room = meta[1], tonumber(meta[2]) or 0, tonumber(meta[3]) or 0
    local n = math.min(limit, src.out)
    if unlimited == 0 then n = math.min(n, room) end
    if costly(strategy) then
      local size = redis.call('ZCARD', K.lex)
      if size > 0 then n = math.min(n, math.floor(maxCost / size)) end
    end
    norand = n > 0 and RANDOM[strategy] and A[P.rand] == ''
    if norand then
      more = true -- (before any read of the move; Go sends them next)
    elseif n > 0 and (unlimited > 0 or room > 0) then
      local ids, recs, take = ownFront(from, n)
      local keys = {}
      for i = 1, #ids do keys[i] = recs[i].key end
      local rnd, hashKey = orderPicks(A[P.rand], ids, keys)
      -- (a plan that fails, a Scale that would pass MAXCOUNT, moves nothing)
      local plan = #ids > 0 and planAssign(strategy, #ids, false, room, now, maxCost, rnd, hashKey)
      if plan then
        local comps = plan.comps
        take()
        local chunkOf, ownKV = ownAppend(comps, plan.first, #ids, ids, 0)
        hsetMany(K.orders, ownKV)
        local okv = {}
        for i, id in ipairs(ids) do
          local r = recs[i]
          r.comp, r.chunk, r.mv = comps[i], chunkOf[i], r.mv + 1
          okv[#okv + 1] = id
          okv[#okv + 1] = encOrder(r)
          moves[#moves + 1] = id
          moves[#moves + 1] = from
          moves[#moves + 1] = comps[i]
        end
        hsetMany(K.orders, okv)
        countUp('moved', #ids)
        saveAssigned(plan.first, plan.cur, plan.eligDone)
        local nsrc = copyScale(src)
        nsrc.out = nsrc.out - #ids
        saveScale(from, src, nsrc)
        flushAgg()
        more = more or redis.call('ZCARD', K.lapq) > 0
      end
    end
  end

  local changes = redis.call('LRANGE', K.journal, 0, limit - 1)
  if #changes > 0 then redis.call('LTRIM', K.journal, #changes, -1) end
  local dropped = tonumber(redis.call('HGET', K.meta, 'jd')) or 0
  if dropped > 0 then redis.call('HDEL', K.meta, 'jd') end
  more = more or redis.call('LLEN', K.journal) > 0
  sweep(now, ret)

  local out = {norand and 2 or more and 1 or 0, redis.call('ZCARD', K.lapsed) + redis.call('ZCARD', K.ejq), dropped, #changes}
  for _, c in ipairs(changes) do out[#out + 1] = c end
  for _, m in ipairs(moves) do out[#out + 1] = m end
  return out
end
