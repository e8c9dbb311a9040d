-- read.lua: read one thing of a pool; changes nothing.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (READ): what, id, and for 'order' and 'batch' now ms and
--   retention ms (a record past its time then reads as absent); what is
--   'pool'  -> {strategy, slowStart ms, createdAt ms, Scales, then the
--              health options (health.lua) ht, ls, ol, mf, fw, et, each
--              false where absent}
--   'scale' -> the Scale as scaleView shows it (DISPATCH NOSCALE)
--   'order' -> the order as orderView shows it (DISPATCH NOORDER)
--   'batch' -> the batch's record            (DISPATCH NOBATCH)
--   'table' -> {compId, orderCount, ...} of the eligible Scales, sorted
-- Errors: DISPATCH NOPOOL.

function ENTRY.readOne(A)
  local what, id = A[READ.what], A[READ.id]
  if not poolExists() then return fail('NOPOOL') end
  if what == 'pool' then
    local m = redis.call('HMGET', K.meta, unpack(POOLFIELDS))
    return {m[1], m[2], m[3], redis.call('HLEN', K.scales), m[4], m[5], m[6], m[7], m[8], m[9]}
  elseif what == 'scale' then
    local c = getScale(id)
    if not c then return fail('NOSCALE', id) end
    return scaleView(c)
  elseif what == 'order' then
    local o = getOrder(id)
    if not o or not live(o, tonumber(A[READ.now]), tonumber(A[READ.retention])) then return fail('NOORDER', id) end
    return orderView(o)
  elseif what == 'batch' then
    local now = tonumber(A[READ.now])
    -- A batch named after its order lives in the order's record
    -- (records.lua); an id of that form that is not one is looked up as
    -- any other.
    local oid, tag = string.match(id, '^(.+):(%x+)$')
    if oid and #tag == TAGLEN then
      local b = namedBatch(oid, getOrder(oid), tag, now, tonumber(A[READ.retention]))
      if b then return b end
    end
    local b = getBatch(id)
    if not b or not batchLive(b, now) then return fail('NOBATCH', id) end
    return b
  elseif what == 'table' then
    return redis.call('ZRANGE', K.elig, 0, -1, 'WITHSCORES')
  end
  return fail('INVALID', what)
end
