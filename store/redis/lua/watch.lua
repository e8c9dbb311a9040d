-- watch.lua: a pool as its watchers see it (dispatch.Snapshot); changes
-- nothing.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (WATCH): edge, buckets.
-- Reply: {strategy, slowStart ms, createdAt ms, Scales, dispatched,
--   completed, cancelled, moved, failed, histogram, compId, orderCount,
--   Scale as scaleView shows it, ...}: every Scale when there are at most
--   2 × edge, else the edge lowest then the edge highest by (orderCount,
--   compId); histogram is {} with every Scale, else {min, width, count,
--   ...} over all Scales (dispatch.HistogramWidth). Errors: DISPATCH NOPOOL.
--
-- Cost: O(edge log N + buckets log N); the Scales are in two sorted sets,
-- elig and load (getScale), merged here as scales_list.lua merges them.

local function watch(A)
  local edge, buckets = tonumber(A[WATCH.edge]), tonumber(A[WATCH.buckets])
  local m = redis.call('HMGET', K.meta, 's', 'ss', 'c', COUNTERS.dispatched, COUNTERS.completed,
    COUNTERS.cancelled, COUNTERS.moved, COUNTERS.failed)
  if not m[1] then return fail('NOPOOL') end
  local n = redis.call('HLEN', K.scales)

  -- merged returns the entries of two WITHSCORES replies, {compId, count},
  -- in (orderCount, compId) order.
  local function merged(a, b)
    local out, i, j = {}, 1, 1
    while i <= #a or j <= #b do
      local takeA = j > #b
      if i <= #a and j <= #b then
        local ca, cb = tonumber(a[i + 1]), tonumber(b[j + 1])
        takeA = ca < cb or (ca == cb and less(a[i], b[j]))
      end
      if takeA then
        out[#out + 1] = {a[i], a[i + 1]}
        i = i + 2
      else
        out[#out + 1] = {b[j], b[j + 1]}
        j = j + 2
      end
    end
    return out
  end

  local function range(from, to)
    return merged(redis.call('ZRANGE', K.elig, from, to, 'WITHSCORES'),
      redis.call('ZRANGE', K.load, from, to, 'WITHSCORES'))
  end

  local picked, hist = {}, {}
  if n <= 2 * edge then
    picked = range(0, -1)
  else
    local low, high = range(0, edge - 1), range(-edge, -1)
    for i = 1, edge do picked[i] = low[i] end
    for i = #high - edge + 1, #high do picked[#picked + 1] = high[i] end
    local lo, hi = tonumber(picked[1][2]), tonumber(picked[#picked][2])
    local width = math.floor((hi - lo) / buckets) + 1
    hist = {fmt(lo), fmt(width)}
    for i = 0, buckets - 1 do
      local from, to = fmt(lo + i * width), fmt(lo + (i + 1) * width - 1)
      hist[#hist + 1] = redis.call('ZCOUNT', K.elig, from, to) + redis.call('ZCOUNT', K.load, from, to)
    end
  end

  local out = {m[1], m[2], m[3], n, m[4] or '0', m[5] or '0', m[6] or '0', m[7] or '0', m[8] or '0', hist}
  for k = 1, #picked, WRITE do
    local last = math.min(k + WRITE - 1, #picked)
    local ids = {}
    for i = k, last do ids[#ids + 1] = picked[i][1] end
    local recs = redis.call('HMGET', K.scales, unpack(ids))
    for i = k, last do
      out[#out + 1] = picked[i][1]
      out[#out + 1] = picked[i][2]
      out[#out + 1] = scaleView(decScale(recs[i - k + 1], picked[i][2]))
    end
  end
  return out
end
