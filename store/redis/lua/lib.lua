-- lib.lua: the helpers every script shares. scripts.go puts this file in
-- front of each script, so it is not a script by itself.
--
-- KEYS (every script gets all keys of one pool, in this order; see doc.go):
--   1 meta  2 scales  3 load  4 elig  5 orders  6 own  7 batches  8 idem
--   9 oexp  10 bexp  11 strat  12 tmp  13 gone  14 bref  15 lex  16 ring
--
-- Numbers are exact: every value stays below 2^53 and is formatted with fmt,
-- never tostring (which keeps only 14 digits). Strings are never compared
-- with < (Lua uses strcoll, and Redis sets the locale): see less.

local K = {
  meta = KEYS[1], scales = KEYS[2], load = KEYS[3], elig = KEYS[4],
  orders = KEYS[5], own = KEYS[6], batches = KEYS[7], idem = KEYS[8],
  oexp = KEYS[9], bexp = KEYS[10], strat = KEYS[11], tmp = KEYS[12],
  gone = KEYS[13], bref = KEYS[14], lex = KEYS[15], ring = KEYS[16],
}

local SWEEP = 128     -- expired records one call removes from each queue
local CHUNK = 64      -- order ids per chunk of a Scale's own index
local RING = 16       -- call tokens remembered for retried calls
local WRITE = 1000    -- values per variadic command (unpack holds ~8000)

local function fmt(x) return string.format('%.0f', x) end

-- hex writes a non-negative integer below 2^53 in hexadecimal (read it
-- with tonumber(s, 16)): refs and chunk numbers.
local function hex(x) return string.format('%x', x) end

local function fail(code, detail)
  return redis.error_reply('DISPATCH ' .. code .. ' ' .. (detail or ''))
end

-- split cuts s at each sep; with max, the last of max fields keeps the rest.
local function split(s, sep, max)
  local out, i = {}, 1
  while true do
    if max and #out == max - 1 then out[#out + 1] = string.sub(s, i); return out end
    local j = string.find(s, sep, i, true)
    if not j then out[#out + 1] = string.sub(s, i); return out end
    out[#out + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end

-- less orders strings by bytes, as ZSET members and Go's strings.Compare do.
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- callMany sends cmd key with the arguments of list, in slices unpack can
-- hold (step: arguments per item, so that no item is cut).
local function callMany(cmd, key, list, step)
  local per = WRITE - WRITE % step
  for i = 1, #list, per do
    redis.call(cmd, key, unpack(list, i, math.min(i + per - 1, #list)))
  end
end

-- hsetMany writes field/value pairs (a flat list).
local function hsetMany(key, kv) callMany('HSET', key, kv, 2) end

-- hmget reads the fields of a hash (a list) into a table field -> value
-- (false for a missing field).
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, WRITE do
    local hi = math.min(i + WRITE - 1, #fields)
    local v = redis.call('HMGET', key, unpack(fields, i, hi))
    for j = i, hi do out[fields[j]] = v[j - i + 1] end
  end
  return out
end

-- Scales: "weight|state|maxOrders|outstanding|baseLoad|activeSinceMs|avgMs|
-- tailChunk|tailFill|lowChunk"; state a (active), d (draining), x (down).
local SCALE = '^' .. string.rep('([^|]*)|', 9) .. '([^|]*)$'

local function decScale(s)
  if not s then return nil end
  local w, st, max, out, base, since, avg, ct, cn, cl = string.match(s, SCALE)
  return {w = tonumber(w), st = st, max = tonumber(max), out = tonumber(out),
    base = tonumber(base), since = since, avg = avg, ct = tonumber(ct),
    cn = tonumber(cn), cl = tonumber(cl)}
end

-- encScale writes the numbers with Lua's own conversion (14 significant
-- digits), which is exact for them: weights, counts and chunk numbers stay
-- below 2^32 (dispatch.MaxOrderCount and the Scale limits).
local function encScale(c)
  return c.w .. '|' .. c.st .. '|' .. c.max .. '|' .. c.out .. '|' .. c.base .. '|' ..
    c.since .. '|' .. c.avg .. '|' .. c.ct .. '|' .. c.cn .. '|' .. c.cl
end

local function getScale(id) return decScale(redis.call('HGET', K.scales, id)) end

local function copyScale(c)
  return {w = c.w, st = c.st, max = c.max, out = c.out, base = c.base, since = c.since,
    avg = c.avg, ct = c.ct, cn = c.cn, cl = c.cl}
end

local function count(c) return c.base + c.out end

local function eligible(c)
  return c ~= nil and c.st == 'a' and (c.max == 0 or count(c) < c.max)
end

-- agg collects the changes of the pool's free-room aggregates: u counts the
-- eligible Scales without maxOrders, r sums maxOrders - orderCount over the
-- other eligible Scales. flushAgg writes them to meta.
local agg = {u = 0, r = 0}

local function account(c, sign)
  if not eligible(c) then return end
  if c.max == 0 then agg.u = agg.u + sign else agg.r = agg.r + sign * (c.max - count(c)) end
end

local function flushAgg()
  if agg.u ~= 0 then redis.call('HINCRBY', K.meta, 'u', fmt(agg.u)) end
  if agg.r ~= 0 then redis.call('HINCRBY', K.meta, 'r', fmt(agg.r)) end
  agg.u, agg.r = 0, 0
end

-- saveScales replaces the records of Scales ids, old[id] (nil: new) by
-- new[id], in scales, load, lex, elig (unless eligDone: the caller has)
-- and the aggregates, with one variadic write per key for all of them.
local function saveScales(ids, old, new, eligDone)
  local skv, load, add, rem, lexAdd, lexRem = {}, {}, {}, {}, {}, {}
  for _, id in ipairs(ids) do
    local o, c = old[id], new[id]
    account(o, -1)
    account(c, 1)
    skv[#skv + 1] = id
    skv[#skv + 1] = encScale(c)
    if not o or count(o) ~= count(c) then
      load[#load + 1] = fmt(count(c))
      load[#load + 1] = id
    end
    -- lex holds the eligible Scales by compId alone (score 0), for the
    -- strategies that pick by rank or by name.
    if eligible(c) and not eligible(o) then
      lexAdd[#lexAdd + 1] = 0
      lexAdd[#lexAdd + 1] = id
    elseif eligible(o) and not eligible(c) then
      lexRem[#lexRem + 1] = id
    end
    if not eligDone then
      if eligible(c) then
        if not eligible(o) or count(o) ~= count(c) then
          add[#add + 1] = fmt(count(c))
          add[#add + 1] = id
        end
      elseif eligible(o) then
        rem[#rem + 1] = id
      end
    end
  end
  hsetMany(K.scales, skv)
  callMany('ZADD', K.load, load, 2)
  callMany('ZADD', K.lex, lexAdd, 2)
  callMany('ZREM', K.lex, lexRem, 1)
  callMany('ZADD', K.elig, add, 2)
  callMany('ZREM', K.elig, rem, 1)
end

-- saveScale replaces Scale id's record old (nil: new) by new (nil: removed);
-- see saveScales.
local function saveScale(id, old, new, eligDone)
  if new then return saveScales({id}, {[id] = old}, {[id] = new}, eligDone) end
  account(old, -1)
  redis.call('HDEL', K.scales, id)
  redis.call('ZREM', K.load, id)
  if eligible(old) then
    redis.call('ZREM', K.elig, id)
    redis.call('ZREM', K.lex, id)
  end
end

-- Orders: "<state><ref>|doneMs|compId|chunk|key", state a (assigned), c
-- (completed), x (cancelled); ref names the batch in bref, chunk (hexadecimal)
-- the chunk of the Scale's own index; doneMs is empty while assigned; the
-- key comes last, as it may hold '|'.
local ORDER = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$'

local function decOrder(s)
  if not s then return nil end
  local head, done, comp, chunk, key = string.match(s, ORDER)
  return {st = string.sub(head, 1, 1), ref = string.sub(head, 2), done = done, comp = comp,
    chunk = chunk, key = key}
end

local function encOrder(o)
  return table.concat({o.st .. o.ref, o.done, o.comp, o.chunk, o.key}, '|')
end

local function getOrder(id) return decOrder(redis.call('HGET', K.orders, id)) end

-- live: an order is held while assigned, and until retention has passed
-- since it was completed or cancelled.
local function live(o, now, ret)
  return o.st == 'a' or tonumber(o.done) + ret >= now
end

-- batchLive: a batch record ("createdMs|expiresMs|…") is held until its
-- time has passed.
local function batchLive(b, now)
  return tonumber(split(b, '|', 3)[2]) >= now
end

-- Batch refs: bref holds ref (hexadecimal) -> "batchId|createdMs|orders", what
-- the orders of one batch share, for as long as any of them is stored: the
-- last order record to leave takes it along.
local function refGet(ref)
  local v = redis.call('HGET', K.bref, ref)
  if not v then return nil end
  local f = split(v, '|')
  return f[1], f[2], tonumber(f[3])
end

local function refDrop(ref)
  local bid, at, refs = refGet(ref)
  if not bid then return end
  if refs <= 1 then
    redis.call('HDEL', K.bref, ref)
  else
    redis.call('HSET', K.bref, ref, bid .. '|' .. at .. '|' .. fmt(refs - 1))
  end
end

-- orderView is an order as replies show it:
-- "state|assignedMs|doneMs|batchId|compId|key".
local function orderView(o)
  local bid, at = refGet(o.ref)
  return table.concat({o.st, at or '', o.done, bid or '', o.comp, o.key}, '|')
end

local function ownField(comp, chunk) return comp .. ' ' .. hex(chunk) end

-- ownDrop removes an order id from its chunk of the Scale's own index;
-- returns whether the chunk is now empty.
local function ownDrop(comp, chunk, id)
  local field = ownField(comp, chunk)
  local v = redis.call('HGET', K.own, field)
  if not v then return true end
  local s = ',' .. v
  local p = string.find(s, ',' .. id .. ',', 1, true)
  if p then s = string.sub(s, 1, p) .. string.sub(s, p + #id + 2) end
  if #s == 1 then redis.call('HDEL', K.own, field); return true end
  redis.call('HSET', K.own, field, string.sub(s, 2))
  return false
end

-- advanceLow moves Scale c's lowest chunk past the chunks that emptied, so
-- that a walk over its own index starts at its oldest outstanding order.
local function advanceLow(comp, c)
  while c.cl < c.ct and redis.call('HEXISTS', K.own, ownField(comp, c.cl)) == 0 do
    c.cl = c.cl + 1
  end
end

-- taken marks Scale record c (decScale) as read before a batch gives it
-- orders, for saveAssigned: its outstanding count then (out0) and whether
-- its lowest chunk was its tail (tail0).
local function taken(c)
  c.out0, c.tail0 = c.out, c.cl == c.ct
  return c
end

-- saveAssigned saves the Scales that orders were just given to (first, in
-- the order first picked; cur their records, read with taken). Each was
-- eligible before and only its outstanding count and own-index chunks have
-- changed: it leaves the eligible sets only when it reached its maxOrders,
-- and the room of the pool (meta r) falls by the orders given to Scales
-- with a maxOrders. With eligDone the caller has updated elig. Only a Scale
-- whose lowest chunk was its tail before can need advanceLow: below the
-- tail, the lowest chunk holds an order (release advances it when it
-- empties).
local function saveAssigned(first, cur, eligDone)
  local skv, load, add, full = {}, {}, {}, {}
  for _, id in ipairs(first) do
    local c = cur[id]
    if c.tail0 then advanceLow(id, c) end
    skv[#skv + 1] = id
    skv[#skv + 1] = encScale(c)
    local n = c.base + c.out
    load[#load + 1] = n
    load[#load + 1] = id
    if c.max > 0 then
      agg.r = agg.r - (c.out - c.out0)
      if n >= c.max then full[#full + 1] = id end
    end
    if not eligDone and (c.max == 0 or n < c.max) then
      add[#add + 1] = n
      add[#add + 1] = id
    end
  end
  hsetMany(K.scales, skv)
  callMany('ZADD', K.load, load, 2)
  callMany('ZREM', K.lex, full, 1)
  if not eligDone then
    callMany('ZADD', K.elig, add, 2)
    callMany('ZREM', K.elig, full, 1)
  end
end

-- release ends assigned order o (id) in state st at now: the order record,
-- its Scale's own index and the retention queue. The caller updates the
-- Scale (c, its record as cached) and saves it.
local function release(id, o, c, st, now, ret)
  if c then
    c.out = c.out - 1
    if ownDrop(o.comp, tonumber(o.chunk, 16), id) then advanceLow(o.comp, c) end
  end
  o.st, o.done = st, fmt(now)
  redis.call('HSET', K.orders, id, encOrder(o))
  redis.call('RPUSH', K.oexp, fmt(now + ret) .. '|' .. id)
end

-- expiredHead reads up to SWEEP entries of queue q if its head has expired:
-- most calls find nothing to do and pay for one entry.
local function expiredHead(q, now)
  local head = redis.call('LRANGE', q, 0, 0)[1]
  if not head or tonumber(split(head, '|', 2)[1]) >= now then return {} end
  return redis.call('LRANGE', q, 0, SWEEP - 1)
end

-- sweep removes at most SWEEP records from each queue whose time has passed:
-- orders done more than ret ago, batches and their Idempotency-Keys. An entry
-- whose record was replaced since (an id reused after it expired) only
-- leaves the queue. It returns whether a queue may hold more to remove.
local function sweep(now, ret)
  local items = expiredHead(K.oexp, now)
  local n, more = 0, false
  for _, it in ipairs(items) do
    local f = split(it, '|', 2)
    if tonumber(f[1]) >= now then break end
    n = n + 1
    local o = getOrder(f[2])
    if o and not live(o, now, ret) then
      redis.call('HDEL', K.orders, f[2])
      refDrop(o.ref)
    end
  end
  if n > 0 then redis.call('LTRIM', K.oexp, n, -1) end
  more = n == SWEEP
  items = expiredHead(K.bexp, now)
  n = 0
  for _, it in ipairs(items) do
    local f = split(it, '|', 3)
    if tonumber(f[1]) >= now then break end
    n = n + 1
    local b = redis.call('HGET', K.batches, f[2])
    if b and not batchLive(b, now) then redis.call('HDEL', K.batches, f[2]) end
    if f[3] ~= '' then
      local i = redis.call('HGET', K.idem, f[3])
      if i then
        local g = split(i, '|', 3)
        if g[2] == f[2] and tonumber(g[1]) < now then redis.call('HDEL', K.idem, f[3]) end
      end
    end
  end
  if n > 0 then redis.call('LTRIM', K.bexp, n, -1) end
  return more or n == SWEEP
end

-- The call ring: meta field rc holds "token=reply" of the last RING calls
-- that reported something a retry could not recompute (created, deleted,
-- how many completed), so a call that go-redis re-sends after a lost reply
-- answers as the first run did.
local function ringGet(tok)
  if tok == '' then return nil end
  local rc = redis.call('HGET', K.meta, 'rc')
  if not rc then return nil end
  local p = string.find(' ' .. rc .. ' ', ' ' .. tok .. '=', 1, true)
  if not p then return nil end
  local rest = string.sub(rc, p + #tok + 1)
  local q = string.find(rest, ' ', 1, true)
  return q and string.sub(rest, 1, q - 1) or rest
end

local function ringPut(tok, reply)
  if tok == '' then return end
  local rc = redis.call('HGET', K.meta, 'rc')
  local items = rc and split(rc, ' ') or {}
  items[#items + 1] = tok .. '=' .. reply
  local from = math.max(1, #items - RING + 1)
  redis.call('HSET', K.meta, 'rc', table.concat(items, ' ', from))
end

local function poolExists() return redis.call('EXISTS', K.meta) == 1 end

-- ownAppend puts orders 1..n, assigned to comps[i], at the tail chunks of
-- their Scales' own index: cur[id] holds a Scale's tail chunk (ct) and its
-- fill (cn), first lists the Scales in the order first picked, idOf(i) names
-- order i. Returns each order's chunk (hexadecimal) and the HSET field/value
-- list for K.own, which the caller writes. It runs once per Scale a batch
-- touches, so it keeps per-Scale work small: a Scale given one order (the
-- usual case in a large pool) costs no table.
local function ownAppend(comps, first, cur, n, idOf)
  local byScale, chunkOf, ownKV = {}, {}, {}
  for i = 1, n do
    local id = comps[i]
    local t = byScale[id]
    if t == nil then
      byScale[id] = i
    elseif type(t) == 'number' then
      byScale[id] = {t, i}
    else
      t[#t + 1] = i
    end
  end
  -- the tail chunks that orders join, read in one HMGET
  local tails = {}
  for _, id in ipairs(first) do
    local c = cur[id]
    if c.cn > 0 and c.cn < CHUNK then tails[#tails + 1] = id .. ' ' .. hex(c.ct) end
  end
  local tail = hmget(K.own, tails)
  for _, id in ipairs(first) do
    local c, idx = cur[id], byScale[id]
    if type(idx) == 'number' then
      if c.cn >= CHUNK then c.ct, c.cn = c.ct + 1, 0 end
      local chunk = hex(c.ct)
      local field = id .. ' ' .. chunk
      local v = idOf(idx) .. ','
      if c.cn > 0 then v = (tail[field] or '') .. v end
      ownKV[#ownKV + 1] = field
      ownKV[#ownKV + 1] = v
      chunkOf[idx] = chunk
      c.cn = c.cn + 1
    else
      local j = 1
      while j <= #idx do
        if c.cn >= CHUNK then c.ct, c.cn = c.ct + 1, 0 end
        local chunk = hex(c.ct)
        local field = id .. ' ' .. chunk
        local take = math.min(#idx - j + 1, CHUNK - c.cn)
        local buf = {}
        if c.cn > 0 then buf[1] = tail[field] or '' end
        for k = j, j + take - 1 do
          buf[#buf + 1] = idOf(idx[k]) .. ','
          chunkOf[idx[k]] = chunk
        end
        ownKV[#ownKV + 1] = field
        ownKV[#ownKV + 1] = table.concat(buf)
        c.cn, j = c.cn + take, j + take
      end
    end
  end
  return chunkOf, ownKV
end
