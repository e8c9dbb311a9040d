-- scales_list.lua: one page of a pool's Scales by (orderCount, compId).
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (SCALES_LIST): limit, the cursor's count (orderCount, '' for
--   the first page) and after (compId): the page starts after the Scale
--   (orderCount, compId), whether or not it is still there.
-- Reply: {more (1 or 0), compId, orderCount, Scale as scaleView shows it,
--   ...}.
-- Errors: DISPATCH NOPOOL.
--
-- The Scales are in two sorted sets, elig and load (getScale): the page
-- merges the next limit + 1 of each (ranked.lua).

function ENTRY.scalesList(A)
  local limit, after, afterId = tonumber(A[SCALES_LIST.limit]), A[SCALES_LIST.count], A[SCALES_LIST.after]
  if not poolExists() then return fail('NOPOOL') end

  -- from returns the first rank of ZSET z after the cursor. Ranks [lo, hi)
  -- hold the cursor's count; binary search them for the first compId after
  -- the cursor's, by bytes.
  local function from(z)
    if after == '' then return 0 end
    local lo = redis.call('ZCOUNT', z, '-inf', '(' .. after)
    local hi = redis.call('ZCOUNT', z, '-inf', after)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local m = redis.call('ZRANGE', z, mid, mid)[1]
      if less(afterId, m) then hi = mid else lo = mid + 1 end
    end
    return lo
  end

  local fa, fb = from(K.elig), from(K.load)
  local a = redis.call('ZRANGE', K.elig, fa, fa + limit, 'WITHSCORES')
  local b = redis.call('ZRANGE', K.load, fb, fb + limit, 'WITHSCORES')
  local ids, counts = mergeRanked(a, b, limit + 1)
  local out = {0}
  if #ids > limit then
    out[1] = 1
    ids[#ids], counts[#counts] = nil, nil
  end
  return appendScales(out, ids, counts)
end
