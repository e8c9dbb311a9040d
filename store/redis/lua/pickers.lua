-- pickers.lua: the strategies that read every eligible Scale for each
-- order, ports of the Pickers of package balancing, operation for
-- operation. scripts.go puts it, then assign.lua, in front of dispatch.lua.
--
-- A picker gets cs, the eligible Scales sorted by compId as balancing's
-- Candidates: {id, n = orderCount, w = effective weight >= 1, avg = the
-- response-time average or nil, cur = the current weight of the smooth
-- round robins or nil}, and the state st of the strategy (strat), and
-- returns the index in cs of the Scale that gets the order. Integers
-- stay below 2^53 (ratios are cross-multiplied), so they are exact in Lua's
-- doubles; the floating point of weighted-response-time runs in the same
-- order as in Go.

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

local pickers = {}

pickers['weighted-waterfill'] = function(cs)
  local best = 1
  for i = 2, #cs do
    local c, b = cs[i], cs[best]
    if (c.n + 1) * b.w < (b.n + 1) * c.w then best = i end
  end
  return best
end

pickers['weighted-random'] = function(cs, _, r1)
  return onWeightAxis(cs, r1 % totalWeight(cs))
end

pickers['weighted-round-robin'] = function(cs, st)
  local i = onWeightAxis(cs, st.c % totalWeight(cs))
  st.c = st.c + 1
  return i
end

pickers['smooth-weighted-round-robin'] = function(cs, st)
  return smooth(cs, 1, nil)
end

pickers['least-connections'] = function(cs, st)
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
end

pickers['weighted-response-time'] = function(cs, st, r1)
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
end
