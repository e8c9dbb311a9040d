-- ranked.lua: the Scales in (orderCount, compId) order, for the readers
-- that list them (scales_list.lua, watch.lua). The Scales are in two sorted
-- sets, elig and load (getScale); a reader ranges both and merges them.

-- mergeRanked merges two ZRANGE … WITHSCORES replies, a of elig and b of
-- load, by (orderCount, compId): the first limit Scales (all of them when
-- limit is nil), their compIds and their counts in two lists.
local function mergeRanked(a, b, limit)
  local ids, counts, i, j = {}, {}, 1, 1
  while (not limit or #ids < limit) and (i <= #a or j <= #b) do
    local takeA = j > #b
    if i <= #a and j <= #b then
      local ca, cb = tonumber(a[i + 1]), tonumber(b[j + 1])
      takeA = ca < cb or (ca == cb and less(a[i], b[j]))
    end
    if takeA then
      ids[#ids + 1], counts[#counts + 1] = a[i], a[i + 1]
      i = i + 2
    else
      ids[#ids + 1], counts[#counts + 1] = b[j], b[j + 1]
      j = j + 2
    end
  end
  return ids, counts
end

-- appendScales appends to out, for each Scale of ids (counts its
-- orderCounts), its compId, its orderCount and its record as scaleView
-- shows it, reading the records WRITE at a time.
local function appendScales(out, ids, counts)
  for k = 1, #ids, WRITE do
    local last = math.min(k + WRITE - 1, #ids)
    local recs = redis.call('HMGET', K.scales, unpack(ids, k, last))
    for m = k, last do
      out[#out + 1] = ids[m]
      out[#out + 1] = counts[m]
      out[#out + 1] = scaleView(decScale(recs[m - k + 1], counts[m]))
    end
  end
  return out
end
