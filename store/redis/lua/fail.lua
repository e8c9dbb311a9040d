-- fail.lua: a failure report (dispatch.FailRequest): the caller could not
-- hand an order to a Scale.
--
-- Keys: the pool's keys (lib.lua), then the call's key.
-- Arguments (FAIL): orderId, compId, now ms, retention ms, maxCost (the
--   cost cap, as dispatch.lua), the call's token, rand: the random numbers
--   of the order (two, RANDDIGITS hex digits each; lib.lua's randPair).
-- Reply: {moved, counted, ejected (each 1/0), the order as orderView shows
--   it}. A call that go-redis re-sends answers as the first run did
--   (callGet). Errors: DISPATCH NOPOOL, NOORDER, NOELIG (nothing changed,
--   nothing counted), CAP, STRATEGY, TOOEXPENSIVE.
--
-- An order no longer assigned to the Scale reported (moved, finished; the
-- Scale may be unknown) changes nothing. Else the call settles the pool's
-- due Scales, as a dispatch does (they stay settled if it then fails), and
-- the order goes, as a batch of that one
-- order with the pool's strategy, to an eligible Scale other than the one
-- reported: that Scale leaves the eligible Scales for the pick (lib.lua's
-- excluded, getScale) and comes back after it. Then the report counts
-- against the Scale unless it is ejected, and may eject it.

function ENTRY.failReport(A)
  local P = FAIL
  local oid, comp, now, ret = A[P.orderId], A[P.compId], tonumber(A[P.now]), tonumber(A[P.retention])
  local maxCost, tok = tonumber(A[P.maxCost]), A[P.token]
  if not poolExists() then return fail('NOPOOL') end
  local prior = callGet(tok)
  if prior then return split(prior, '|', 4) end
  local ord = getOrder(oid)
  if not ord or not live(ord, now, ret) then return fail('NOORDER', oid) end
  if ord.st ~= 'a' or ord.comp ~= comp then return {0, 0, 0, orderView(ord)} end
  local opts = healthOpts()
  settleDue(now, opts, nil)
  local src = getScale(comp)

  -- The reported Scale steps out of the eligible Scales for the pick.
  local away = copyScale(src)
  away.ex = true
  saveScale(comp, src, away)
  flushAgg()
  excluded = comp
  local meta = redis.call('HMGET', K.meta, 's', 'u', 'r')
  local strategy, unlimited, room = meta[1], tonumber(meta[2]) or 0, tonumber(meta[3]) or 0
  local function back()
    excluded = nil
    saveScale(comp, away, src)
    flushAgg()
  end
  if unlimited == 0 and room == 0 then
    back()
    return fail('NOELIG', 'none')
  end
  local rnd, hashKey = orderPicks(A[P.rand], {oid}, {ord.key})
  local plan, failed = planAssign(strategy, 1, false, room, now, maxCost, rnd, hashKey)
  if not plan then
    back()
    return failed
  end
  excluded = nil

  local to = plan.comps[1]
  local at, ref = ownAt(ord)
  ownDrop(comp, at, oid, ref)
  local chunkOf, ownKV = ownAppend(plan.comps, plan.first, 1, {oid}, 0)
  hsetMany(K.orders, ownKV)
  ord.comp, ord.chunk, ord.mv = to, chunkOf[1], ord.mv + 1
  redis.call('HSET', K.orders, oid, encOrder(ord))
  countUp('moved', 1)
  saveAssigned(plan.first, plan.cur, plan.eligDone)

  local c = copyScale(src)
  c.out = c.out - 1
  local counted, ejected = 0, 0
  if failureCounts(c, now) then
    counted = 1
    countUp('failed', 1)
    if countFailure(c, now, opts) then ejected = 1 end
    settle(comp, c, now, opts)
  end
  saveScale(comp, away, c)
  flushAgg()

  local reply = {1, counted, ejected, orderView(ord)}
  callPut(tok, table.concat(reply, '|'))
  sweep(now, ret)
  return reply
end
