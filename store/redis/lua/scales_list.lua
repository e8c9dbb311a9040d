-- scales_list.lua: one page of a pool's Scales by (orderCount, compId).
--
-- KEYS: the pool's keys (lib.lua).
-- ARGV: 1 limit, 2 cursor orderCount ('' for the first page), 3 cursor
--   compId: the page starts after the Scale (orderCount, compId), whether
--   or not it is still there.
-- Reply: {more (1 or 0), compId, orderCount, Scale as scaleView shows it,
--   ...}.
-- Errors: DISPATCH NOPOOL.

local limit = tonumber(ARGV[1])
if not poolExists() then return fail('NOPOOL') end

local start = 0
if ARGV[2] ~= '' then
  -- Ranks [lo, hi) hold the count; binary search them for the first compId
  -- after the cursor's, by bytes.
  local lo = redis.call('ZCOUNT', K.load, '-inf', '(' .. ARGV[2])
  local hi = redis.call('ZCOUNT', K.load, '-inf', ARGV[2])
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', K.load, mid, mid)[1]
    if less(ARGV[3], m) then hi = mid else lo = mid + 1 end
  end
  start = lo
end

local r = redis.call('ZRANGE', K.load, start, start + limit, 'WITHSCORES')
local out = {0}
local ids = {}
for j = 1, math.min(#r, 2 * limit), 2 do ids[#ids + 1] = r[j] end
if #r > 2 * limit then out[1] = 1 end
if #ids == 0 then return out end
for i = 1, #ids, WRITE do
  local last = math.min(i + WRITE - 1, #ids)
  local recs = redis.call('HMGET', K.scales, unpack(ids, i, last))
  for j = i, last do
    out[#out + 1] = ids[j]
    out[#out + 1] = r[2 * j]
    out[#out + 1] = scaleView(decScale(recs[j - i + 1], r[2 * j]))
  end
end
return out
