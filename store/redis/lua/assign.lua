-- assign.lua: runs the strategies of pickers.lua's STRATEGIES (DESIGN
-- §3): waterfill's plan of the whole batch, the others one order at a time.
-- It follows lib.lua, ring.lua and pickers.lua.
--
-- Order i is picked with the two random numbers of order i among the
-- Scales eligible after the picks before it: a picked Scale's orderCount
-- rises at once, and a Scale that reaches its maxOrders leaves. The caller
-- has checked that the eligible Scales have room for the batch.
--
-- The cheap strategies never read the whole pool: their picks reach
-- eligible Scales by rank or by name in lex (a Scale that fills up leaves
-- lex at once, and a dry run puts it back at the end), consistent-hash
-- walks the ring. The costly ones read every eligible Scale for each
-- order, and refuse a batch whose eligible Scales × orders exceed the cost
-- cap. Only a real dispatch writes a strategy's state.

-- slowStartWeight is balancing.SlowStartWeight: the weight w of a Scale
-- active for t ms ramps up linearly over a window of ss ms.
local function slowStartWeight(w, t, ss)
  if ss <= 0 or t >= ss then return w end
  return math.max(1, math.min(w, math.floor(w * math.max(0, t) / ss)))
end

-- newBatch returns the bookkeeping of a batch at now (ms) under a slow
-- start window of ss ms: the Scales' records as the batch changes them
-- (cur, read with taken), the compIds in the order first picked (first),
-- the compId of each order (comps).
local function newBatch(now, ss)
  local b = {cur = {}, first = {}, comps = {}, picked = {}}
  -- scale returns Scale id's record as the batch has changed it so far
  -- (false if there is none); rec and n are its stored record and
  -- orderCount if the caller has read them already.
  function b.scale(id, rec, n)
    local c = b.cur[id]
    if c == nil then
      if rec then
        c = taken(decScale(rec, n))
      else
        c = getScale(id)
        c = c and taken(c) or false
      end
      b.cur[id] = c
    end
    return c
  end
  -- weight is the effective weight of a Scale of weight w active since
  -- since (ms, a string).
  function b.weight(w, since) return slowStartWeight(w, now - (tonumber(since) or 0), ss) end
  -- take gives the next order to Scale id, read with scale before, and
  -- reports whether it stays eligible.
  function b.take(id)
    local c = b.cur[id]
    if not b.picked[id] then b.picked[id] = true; b.first[#b.first + 1] = id end
    c.out = c.out + 1
    b.comps[#b.comps + 1] = id
    return eligible(c)
  end
  return b
end

-- candidates returns the eligible Scales in compId order as pickers.lua
-- sees them, with their stored records (rec) and current weights (cur,
-- from the state st). It reads only the fields the pickers need from each
-- record.
local function candidates(b, st)
  local ids = redis.call('ZRANGE', K.lex, 0, -1)
  local cs = {}
  for j = 1, #ids, WRITE do
    local last = math.min(j + WRITE - 1, #ids)
    local recs = redis.call('HMGET', K.scales, unpack(ids, j, last))
    local ns = redis.call('ZMSCORE', K.elig, unpack(ids, j, last))
    for k = j, last do
      local id, rec = ids[k], recs[k - j + 1]
      local w, since, avg = string.match(rec, '^(%d+)|%a|%d+|%d+|(%d*)|([^|]*)')
      cs[k] = {id = id, rec = rec, n = tonumber(ns[k - j + 1]), w = b.weight(tonumber(w), since),
        avg = tonumber(avg), cur = st.cur and st.cur[id]}
    end
  end
  return cs
end

-- ranks returns the eligible Scales in compId order (lex, of size
-- entries) as balancing.Ranks, for the cheap picks, with the picks of batch
-- b: r.size, r.at(rank) -> compId, r.after(id) -> the first compId after
-- id or nil, r.load(id) -> orderCount and effective weight, r.fits(id) ->
-- whether Scale id is eligible.
local function ranks(b, size)
  local r = {size = size}
  function r.at(rank) return redis.call('ZRANGE', K.lex, rank, rank)[1] end
  function r.after(id) return redis.call('ZRANGE', K.lex, '(' .. id, '+', 'BYLEX', 'LIMIT', 0, 1)[1] end
  function r.load(id)
    local c = b.scale(id)
    return count(c), b.weight(c.w, c.since)
  end
  function r.fits(id)
    local c = b.scale(id)
    return c and eligible(c)
  end
  return r
end

-- stAssign assigns n orders of a batch with strategy s (an entry of
-- STRATEGIES with a pick) at now (ms). rnd(i) returns the two random
-- numbers of order i, hashKey(i) the key it hashes by. It returns the plan
-- {comps, cur, first} (newBatch); or nil and an error reply, having
-- changed nothing.
local function stAssign(s, strategy, n, dry, now, maxCost, rnd, hashKey)
  -- Any Scale may get all n orders: none may be within n of MAXCOUNT.
  local capped = capCheck(n, false)
  if capped then return nil, capped end
  local b = newBatch(now, tonumber(redis.call('HGET', K.meta, 'ss')) or 0)
  local plan = {comps = b.comps, cur = b.cur, first = b.first}
  local size = redis.call('ZCARD', K.lex)

  if s.cost == 'cheap' then
    local st = s.state and s.state.load() or {}
    local r = ranks(b, size)
    local left = {}
    for i = 1, n do
      local r1, r2 = rnd(i)
      local id = s.pick(r, st, r1, r2, hashKey(i))
      b.scale(id)
      if not b.take(id) then
        redis.call('ZREM', K.lex, id)
        left[#left + 1] = id
        r.size = r.size - 1
      end
    end
    if dry then
      for _, id in ipairs(left) do redis.call('ZADD', K.lex, 0, id) end
    elseif s.state then
      s.state.save(st)
    end
    return plan
  end

  if size * n > maxCost then
    return nil, fail('TOOEXPENSIVE', strategy .. ' ' .. fmt(size) .. ' ' .. fmt(n) .. ' ' .. fmt(maxCost))
  end
  local st = s.state and s.state.load() or {}
  local cs = candidates(b, st)
  local gone -- the last pick's Scale, if that filled it up
  for i = 1, n do
    local k = s.pick(cs, st, (rnd(i)))
    local c = cs[k]
    b.scale(c.id, c.rec, c.n)
    c.n = c.n + 1
    gone = nil
    if not b.take(c.id) then gone = table.remove(cs, k) end
  end
  if not dry and s.state then
    if gone then table.insert(cs, gone) end
    s.state.save(st, cs)
  end
  return plan
end

-- costly reports whether strategy reads every eligible Scale for every
-- order, and so runs under the cost cap.
local function costly(strategy)
  local s = STRATEGIES[strategy]
  return s ~= nil and s.cost == 'costly'
end

-- planAssign assigns n orders with the pool's strategy, as its entry in
-- STRATEGIES says: its plan of the whole batch, or stAssign's picks. It
-- returns the plan {comps, cur, first, eligDone}, eligDone set when the
-- plan has updated elig itself (saveAssigned); or nil and an error reply,
-- having changed nothing. room is the pool's meta r. P is the elig of a
-- call of several batches (waterfill.lua's wfPend), nil for any other.
local function planAssign(strategy, n, dry, room, now, maxCost, rnd, hashKey, P)
  local s = STRATEGIES[strategy]
  if not s then return nil, fail('STRATEGY', strategy) end
  if s.plan then
    local plan, failed = s.plan(n, dry, room, P)
    if plan then plan.eligDone = true end
    return plan, failed
  end
  return stAssign(s, strategy, n, dry, now, maxCost, rnd, hashKey)
end
