-- scale_orders.lua: one page of a Scale's outstanding orders, oldest first;
-- changes nothing.
--
-- KEYS: the pool's keys (lib.lua).
-- ARGV: 1 compId, 2 limit, 3 cursor chunk (hexadecimal, '' for the first page),
--   4 cursor order id (the last order of the previous page).
-- Reply: {more (1/0), next chunk (hexadecimal), id, view, id, view, ...}, each
--   view as orderView shows it. A cursor order that has left its chunk since
--   resumes at the chunk's start. Errors: DISPATCH NOPOOL, NOSCALE.

local comp, limit, cchunk, cid = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
if not poolExists() then return fail('NOPOOL') end
local c = getScale(comp)
if not c then return fail('NOSCALE', comp) end

local start = c.cl
local skip = nil
if cchunk ~= '' then
  start = math.max(c.cl, tonumber(cchunk, 16) or c.cl)
  skip = cid
end
local out, got, more, last = {}, 0, 0, ''
for chunk = start, c.ct do
  local v = redis.call('HGET', K.own, ownField(comp, chunk))
  if v then
    local list = {}
    for oid in string.gmatch(v, '([^,]+),') do list[#list + 1] = oid end
    local from = 1
    if skip and chunk == start then
      for k, oid in ipairs(list) do
        if oid == skip then from = k + 1; break end
      end
    end
    for k = from, #list do
      local oid = list[k]
      local o = getOrder(oid)
      if o and o.st == 'a' and o.comp == comp then
        if got == limit then more = 1; break end
        got = got + 1
        out[#out + 1] = oid
        out[#out + 1] = orderView(o)
        last = hex(chunk)
      end
    end
  end
  if more == 1 then break end
end
table.insert(out, 1, last)
table.insert(out, 1, more)
return out
