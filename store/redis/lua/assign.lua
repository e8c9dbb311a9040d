-- assign.lua: every strategy but waterfill, one order at a time (DESIGN
-- §3). scripts.go puts it after lib.lua, ring.lua and pickers.lua in front
-- of dispatch.lua.
--
-- Order i is picked with the two random numbers of order i among the
-- Scales eligible after the picks before it: a picked Scale's orderCount
-- rises at once, and a Scale that reaches its maxOrders leaves. The caller
-- has checked that the eligible Scales have room for the batch.
--
-- The cheap strategies never read the whole pool: random, round-robin and
-- power-of-two reach eligible Scales by rank or by name in lex (a Scale
-- that fills up leaves lex at once, and a dry run puts it back at the
-- end), consistent-hash walks the ring. The others (pickers.lua) read every
-- eligible Scale for each order, and refuse a batch whose eligible Scales ×
-- orders exceed the cost cap.
--
-- Strategy state lives in strat: round-robin and weighted-response-time
-- keep field last (the last compId picked), weighted-round-robin field c
-- (its counter), smooth-weighted-round-robin and least-connections one
-- field per Scale of the last pick that has a current weight (absent
-- means 0). Only a real dispatch writes it.

local CHEAP = {random = true, ['round-robin'] = true, ['power-of-two'] = true,
  ['consistent-hash'] = true}

-- slowStartWeight is balancing.SlowStartWeight: the weight w of a Scale
-- active for t ms ramps up linearly over a window of ss ms.
local function slowStartWeight(w, t, ss)
  if ss <= 0 or t >= ss then return w end
  return math.max(1, math.min(w, math.floor(w * math.max(0, t) / ss)))
end

-- loadState reads the strategy's state from strat.
local function loadState(strategy)
  local st = {}
  if strategy == 'round-robin' or strategy == 'weighted-response-time' then
    st.last = redis.call('HGET', K.strat, 'last') or ''
  elseif strategy == 'weighted-round-robin' then
    st.c = tonumber(redis.call('HGET', K.strat, 'c')) or 0
  elseif strategy == 'smooth-weighted-round-robin' or strategy == 'least-connections' then
    st.cur = {}
    local kv = redis.call('HGETALL', K.strat)
    for j = 1, #kv, 2 do st.cur[kv[j]] = tonumber(kv[j + 1]) end
  end
  return st
end

-- saveState writes the state back. Current weights, which the pickers
-- keep in the candidates (cs), are kept for the candidates of the batch's
-- last pick only: balancing forgets the others at that pick.
local function saveState(st, cs)
  if st.last and st.last ~= '' then redis.call('HSET', K.strat, 'last', st.last) end
  if st.c then redis.call('HSET', K.strat, 'c', fmt(st.c)) end
  if st.cur then
    redis.call('DEL', K.strat)
    local kv = {}
    for _, c in ipairs(cs) do
      if c.cur then kv[#kv + 1] = c.id; kv[#kv + 1] = fmt(c.cur) end
    end
    hsetMany(K.strat, kv)
  end
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

-- pickCheap returns the Scale of the next order for random, round-robin,
-- power-of-two and consistent-hash, given the order's random numbers and
-- key, and the size of lex.
local function pickCheap(strategy, b, st, size, r1, r2, key)
  local function at(rank) return redis.call('ZRANGE', K.lex, rank, rank)[1] end
  if strategy == 'random' then return at(r1 % size) end
  if strategy == 'round-robin' then
    local id
    if st.last ~= '' then
      id = redis.call('ZRANGE', K.lex, '(' .. st.last, '+', 'BYLEX', 'LIMIT', 0, 1)[1]
    end
    st.last = id or at(0)
    return st.last
  end
  if strategy == 'power-of-two' then
    if size == 1 then return at(0) end
    local a = r1 % size
    local bb = r2 % (size - 1)
    if bb >= a then bb = bb + 1 end
    local ida, idb = at(a), at(bb)
    local ca, cb = b.scale(ida), b.scale(idb)
    -- b's count/weight below a's, cross-multiplied; ties to a.
    if count(cb) * b.weight(ca.w, ca.since) < count(ca) * b.weight(cb.w, cb.since) then return idb end
    return ida
  end
  local id = ringLookup(key, function(cid)
    local c = b.scale(cid)
    return c and eligible(c)
  end)
  if not id then error('dispatch: the ring has no eligible Scale') end
  return id
end

-- stAssign assigns n orders of a batch with strategy at now (ms). rnd(i)
-- returns the two random numbers of order i, hashKey(i) the key it hashes
-- by. It returns the plan {comps, cur, first} (newBatch); or nil and
-- an error reply, having changed nothing.
local function stAssign(strategy, n, dry, now, maxCost, rnd, hashKey)
  -- Any Scale may get all n orders: none may be within n of MAXCOUNT.
  local capped = capCheck(n, false)
  if capped then return nil, capped end
  local b = newBatch(now, tonumber(redis.call('HGET', K.meta, 'ss')) or 0)
  local plan = {comps = b.comps, cur = b.cur, first = b.first}
  local size = redis.call('ZCARD', K.lex)

  if CHEAP[strategy] then
    local st = loadState(strategy)
    local left = {}
    for i = 1, n do
      local r1, r2 = rnd(i)
      local id = pickCheap(strategy, b, st, size, r1, r2, hashKey(i))
      b.scale(id)
      if not b.take(id) then
        redis.call('ZREM', K.lex, id)
        left[#left + 1] = id
        size = size - 1
      end
    end
    if dry then
      for _, id in ipairs(left) do redis.call('ZADD', K.lex, 0, id) end
    else
      saveState(st)
    end
    return plan
  end

  local pick = pickers[strategy]
  if not pick then return nil, fail('STRATEGY', strategy) end
  if size * n > maxCost then
    return nil, fail('TOOEXPENSIVE', strategy .. ' ' .. fmt(size) .. ' ' .. fmt(n) .. ' ' .. fmt(maxCost))
  end
  local st = loadState(strategy)
  local cs = candidates(b, st)
  local gone -- the last pick's Scale, if that filled it up
  for i = 1, n do
    local k = pick(cs, st, (rnd(i)))
    local c = cs[k]
    b.scale(c.id, c.rec, c.n)
    c.n = c.n + 1
    gone = nil
    if not b.take(c.id) then gone = table.remove(cs, k) end
  end
  if not dry then
    if gone then table.insert(cs, gone) end
    saveState(st, cs)
  end
  return plan
end

-- planAssign assigns n orders with the pool's strategy: waterfill.lua's
-- plan, else stAssign's (either returns nil and an error reply when it
-- refuses). room is the pool's meta r.
local function planAssign(strategy, n, dry, room, now, maxCost, rnd, hashKey)
  if strategy == 'waterfill' then return wfAssign(n, dry, room) end
  return stAssign(strategy, n, dry, now, maxCost, rnd, hashKey)
end
