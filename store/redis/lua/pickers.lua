-- pickers.lua: the strategies, one table of them (STRATEGIES, at the
-- end): the Lua half of balancing's registry (balancing/strategy.go), whose
-- names, cost classes and statefulness TestLuaStrategiesMatchRegistry holds
-- it to. The rules are ports of balancing's Pickers, operation for
-- operation. It follows waterfill.lua and ring.lua, and precedes
-- assign.lua, which runs the table's entries.
--
-- Each entry has:
--   cost   'cheap' (reads O(log N) of the pool per order) or 'costly'
--          (every eligible Scale for every order, under the cost cap), as
--          balancing.Cost;
--   plan   plan(n, dry, room) plans the whole batch (waterfill.lua's
--          wfAssign), and may come with pickOne and takeOne, its plan of
--          one order among Scales without maxOrders in two halves: pickOne()
--          reads the Scale, or nil and an error reply, changing nothing, so
--          that a dispatch reads that Scale's own tail with its records;
--          takeOne(id, dry) gives it the order, and nothing else of the
--          Scale changes (no saveAssigned); or
--   pick   one order at a time (assign.lua's stAssign). A cheap pick(r, st,
--          r1, r2, key) returns the compId of the order with the two random
--          numbers r1, r2 and the key it hashes by, over the ranks r
--          (assign.lua's ranks: the eligible Scales in compId order as
--          balancing.Ranks). A costly pick(cs, st, r1) returns the index in
--          cs, the eligible Scales sorted by compId as balancing's
--          Candidates: {id, n = orderCount, w = effective weight >= 1, avg =
--          the response-time average or nil, cur = the current weight of the
--          smooth round robins or nil};
--   state  for a stateful strategy, how its state st lives in strat (one of
--          STATE): load() before a batch, save(st, cs) after a real one.
--
-- Integers stay below 2^53 (ratios are cross-multiplied), so they are
-- exact in Lua's doubles; the floating point of weighted-response-time
-- runs in the same order as in Go.

local TWO53 = 9007199254740992

local function lessLoaded(a, b) return a.n * b.w < b.n * a.w end

local function totalWeight(cs)
  local t = 0
  for _, c in ipairs(cs) do t = t + c.w end
  return t
end

-- onWeightAxis returns the Scale whose interval on the weight axis holds
-- pos, 0 <= pos < Σw.
local function onWeightAxis(cs, pos)
  local prefix = 0
  for i, c in ipairs(cs) do
    prefix = prefix + c.w
    if pos < prefix then return i end
  end
  error('pickers: position beyond the total weight')
end

-- rrOver is balancing.RoundRobin over cs: the first compId after st.last,
-- wrapping.
local function rrOver(cs, st)
  local lo, hi = 1, #cs + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if less(st.last, cs[mid].id) then hi = mid else lo = mid + 1 end
  end
  if lo > #cs then lo = 1 end
  st.last = cs[lo].id
  return lo
end

-- smooth runs one round of nginx's smooth weighted round robin over the
-- Scales of cs from index i0 for which tied (nil: all) holds, with their
-- current weights cur (nil: 0).
local function smooth(cs, i0, tied)
  local win, winCur, total = nil, 0, 0
  for i = i0, #cs do
    local c = cs[i]
    if not tied or tied(c) then
      local v = (c.cur or 0) + c.w
      c.cur = v
      total = total + c.w
      if not win or v > winCur then win, winCur = i, v end
    end
  end
  cs[win].cur = winCur - total
  return win
end

-- STATE holds the shapes of strategy state in strat: round-robin and
-- weighted-response-time keep field last (the last compId picked),
-- weighted-round-robin field c (its counter), smooth-weighted-round-robin
-- and least-connections one field per Scale of the last pick that has a
-- current weight (absent means 0).
local STATE = {
  last = {
    load = function() return {last = redis.call('HGET', K.strat, 'last') or ''} end,
    save = function(st)
      if st.last ~= '' then redis.call('HSET', K.strat, 'last', st.last) end
    end,
  },
  counter = {
    load = function() return {c = tonumber(redis.call('HGET', K.strat, 'c')) or 0} end,
    save = function(st) redis.call('HSET', K.strat, 'c', fmt(st.c)) end,
  },
  current = {
    load = function()
      local st = {cur = {}}
      local kv = redis.call('HGETALL', K.strat)
      for j = 1, #kv, 2 do st.cur[kv[j]] = tonumber(kv[j + 1]) end
      return st
    end,
    -- The pickers keep the current weights in the candidates (cs); they
    -- are kept for the candidates of the batch's last pick only, as
    -- balancing forgets the others at that pick.
    save = function(_, cs)
      redis.call('DEL', K.strat)
      local kv = {}
      for _, c in ipairs(cs) do
        if c.cur then kv[#kv + 1] = c.id; kv[#kv + 1] = fmt(c.cur) end
      end
      hsetMany(K.strat, kv)
    end,
  },
}

-- STRATEGIES is every strategy of balancing's registry, by name.
local STRATEGIES = {}

STRATEGIES['waterfill'] = {cost = 'cheap', plan = wfAssign, pickOne = wfOnePick, takeOne = wfOneTake}

STRATEGIES['weighted-waterfill'] = {cost = 'costly', pick = function(cs)
  local best = 1
  for i = 2, #cs do
    local c, b = cs[i], cs[best]
    if (c.n + 1) * b.w < (b.n + 1) * c.w then best = i end
  end
  return best
end}

-- random is balancing.Random: rank r1 mod n.
STRATEGIES['random'] = {cost = 'cheap', pick = function(r, _, r1)
  return r.at(r1 % r.size)
end}

STRATEGIES['weighted-random'] = {cost = 'costly', pick = function(cs, _, r1)
  return onWeightAxis(cs, r1 % totalWeight(cs))
end}

-- round-robin is balancing.RoundRobin: the first compId after st.last,
-- wrapping to the first.
STRATEGIES['round-robin'] = {cost = 'cheap', state = STATE.last, pick = function(r, st)
  local id
  if st.last ~= '' then id = r.after(st.last) end
  st.last = id or r.at(0)
  return st.last
end}

STRATEGIES['weighted-round-robin'] = {cost = 'costly', state = STATE.counter, pick = function(cs, st)
  local i = onWeightAxis(cs, st.c % totalWeight(cs))
  st.c = st.c + 1
  return i
end}

STRATEGIES['smooth-weighted-round-robin'] = {cost = 'costly', state = STATE.current, pick = function(cs)
  return smooth(cs, 1, nil)
end}

STRATEGIES['weighted-response-time'] = {cost = 'costly', state = STATE.last, pick = function(cs, st, r1)
  local k, known = 0, 0
  for _, c in ipairs(cs) do
    if c.avg then k, known = k + 1, known + c.avg end
  end
  if k < 2 then return rrOver(cs, st) end
  local mean = known / k
  local total = 0
  for _, c in ipairs(cs) do total = total + (c.avg or mean) end
  local w = 0
  for _, c in ipairs(cs) do w = w + (total - (c.avg or mean)) end
  if not (w >= 0.001) or w == math.huge then return rrOver(cs, st) end
  local u = r1 / TWO53 * w
  local acc = 0
  for i, c in ipairs(cs) do
    acc = acc + (total - (c.avg or mean))
    if u < acc then return i end
  end
  error('pickers: weighted-response-time drew beyond the total weight')
end}

STRATEGIES['least-connections'] = {cost = 'costly', state = STATE.current, pick = function(cs)
  local best, many = 1, false
  for i = 2, #cs do
    if lessLoaded(cs[i], cs[best]) then
      best, many = i, false
    elseif not lessLoaded(cs[best], cs[i]) then
      many = true
    end
  end
  if not many then return best end
  local b = cs[best]
  return smooth(cs, best, function(c) return not lessLoaded(b, c) end)
end}

-- power-of-two is balancing.PowerOfTwo: ranks a = r1 mod n and
-- b = r2 mod (n−1), plus 1 if b >= a; b if its count/weight is below a's
-- (cross-multiplied), else a.
STRATEGIES['power-of-two'] = {cost = 'cheap', pick = function(r, _, r1, r2)
  if r.size == 1 then return r.at(0) end
  local a = r1 % r.size
  local b = r2 % (r.size - 1)
  if b >= a then b = b + 1 end
  local ida, idb = r.at(a), r.at(b)
  local na, wa = r.load(ida)
  local nb, wb = r.load(idb)
  if nb * wa < na * wb then return idb end
  return ida
end}

-- consistent-hash looks the key up on ring.lua's ring, walking past the
-- Scales that are not eligible with the batch's picks.
STRATEGIES['consistent-hash'] = {cost = 'cheap', pick = function(r, _, _, _, key)
  local id = ringLookup(key, r.fits)
  if not id then error('dispatch: the ring has no eligible Scale') end
  return id
end}
