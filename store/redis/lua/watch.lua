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
-- elig and load (getScale), merged by ranked.lua.

function ENTRY.watch(A)
  local edge, buckets = tonumber(A[WATCH.edge]), tonumber(A[WATCH.buckets])
  local m = redis.call('HMGET', K.meta, 's', 'ss', 'c', COUNTERS.dispatched, COUNTERS.completed,
    COUNTERS.cancelled, COUNTERS.moved, COUNTERS.failed)
  if not m[1] then return fail('NOPOOL') end
  local n = redis.call('HLEN', K.scales)

  local function range(from, to)
    return mergeRanked(redis.call('ZRANGE', K.elig, from, to, 'WITHSCORES'),
      redis.call('ZRANGE', K.load, from, to, 'WITHSCORES'))
  end

  local ids, counts, hist = {}, {}, {}
  if n <= 2 * edge then
    ids, counts = range(0, -1)
  else
    local lowIds, lowCounts = range(0, edge - 1)
    local highIds, highCounts = range(-edge, -1)
    for i = 1, edge do ids[i], counts[i] = lowIds[i], lowCounts[i] end
    for i = #highIds - edge + 1, #highIds do
      ids[#ids + 1], counts[#counts + 1] = highIds[i], highCounts[i]
    end
    local lo, hi = tonumber(counts[1]), tonumber(counts[#counts])
    local width = math.floor((hi - lo) / buckets) + 1
    hist = {fmt(lo), fmt(width)}
    for i = 0, buckets - 1 do
      local from, to = fmt(lo + i * width), fmt(lo + (i + 1) * width - 1)
      hist[#hist + 1] = redis.call('ZCOUNT', K.elig, from, to) + redis.call('ZCOUNT', K.load, from, to)
    end
  end

  local out = {m[1], m[2], m[3], n, m[4] or '0', m[5] or '0', m[6] or '0', m[7] or '0', m[8] or '0', hist}
  return appendScales(out, ids, counts)
end
