-- own.lua: the Scales' own indexes and what a batch's picks change in the
-- Scales. It follows lib.lua in the library (functions.go).

-- The own index of a Scale lists its outstanding orders, oldest first, in
-- chunks. Field tailField(compId) holds the tail, "ct|cl|p|id,id,…,": ct the
-- number of the tail chunk, cl the lowest chunk that holds an order, p the
-- chunk before the tail (all hexadecimal). Field ownField(compId, chunk),
-- OFIELD .. "compId chunk", holds a sealed
-- chunk below the tail, "p|n|id,id,…,", with p and n the chunks before and
-- after it; it goes when it empties. The sealed chunks that hold orders
-- form a list from cl to the tail through n and back through p, so a walk
-- reads only chunks that hold orders, however many emptied in between (a
-- Scale with one order outstanding for good while millions pass). A
-- pointer to the next number (p = chunk-1, n = chunk+1, the usual case) is
-- written '', and so is one of a lowest chunk, which has none before it.
-- A tail of OWN bytes of ids or more is sealed before the next order joins
-- it, so that appending to it stays cheap. A dispatch touches only the
-- tail: one read and one write per Scale. An index that empties goes, and
-- the Scale's chunks count from 0 again.
local OWN = 256

-- The own index lives in K.orders (layout 6), in fields that begin with
-- OFIELD (the preamble's, keys.go): a Scale's tail in tailField, so that a
-- single order's dispatch writes its tail with its records (dispatch.lua),
-- its sealed chunks in ownField.
local function tailField(comp) return OFIELD .. comp end

local function ownField(comp, chunk) return OFIELD .. comp .. ' ' .. hex(chunk) end

-- ptr reads a pointer of chunk x ('' is def, the next number).
local function ptr(s, def)
  if s == '' then return def end
  return tonumber(s, 16)
end

-- encPtr writes pointer v of a chunk whose next number is def; one below
-- the lowest chunk cl (none) is written ''.
local function encPtr(v, def, cl)
  if v == def or v < cl then return '' end
  return hex(v)
end

-- ownTail reads a tail (nil: none yet): ct, cl, p and the ids.
local function ownTail(v)
  if not v then return 0, 0, -1, '' end
  local ct, cl, p, ids = string.match(v, '^(%x+)|(%x+)|(%x*)|(.*)$')
  ct, cl = tonumber(ct, 16), tonumber(cl, 16)
  return ct, cl, ptr(p, ct - 1), ids
end

-- sealedOf reads sealed chunk x: p, n and the ids.
local function sealedOf(v, x)
  local p, n, ids = string.match(v, '^(%x*)|(%x*)|(.*)$')
  return ptr(p, x - 1), ptr(n, x + 1), ids
end

local function encSealed(x, p, n, cl, ids)
  return encPtr(p, x - 1, cl) .. '|' .. encPtr(n, x + 1, cl) .. '|' .. ids
end

-- cut removes id from a list "id,id,…,".
local function cut(list, id)
  local s = ',' .. list
  local p = string.find(s, ',' .. id .. ',', 1, true)
  if p then s = string.sub(s, 1, p) .. string.sub(s, p + #id + 2) end
  return string.sub(s, 2)
end

-- putTail writes Scale comp's tail, or removes it when the index is empty.
local function putTail(comp, ct, cl, p, ids)
  if ids == '' and cl == ct then
    redis.call('HDEL', K.orders, tailField(comp))
  else
    redis.call('HSET', K.orders, tailField(comp), hex(ct) .. '|' .. hex(cl) .. '|' .. encPtr(p, ct - 1, cl) .. '|' .. ids)
  end
end

-- ownDrop removes order id from chunk chunk of Scale comp's own index. A
-- sealed chunk that empties goes: the chunks before and after it point
-- to each other, and when it was the lowest, cl moves to the one after it.
-- With pend, an order in the tail that leaves orders in the index is not
-- written: ownDrop returns the tail's field and value, which the caller
-- writes with its own fields (release).
local function ownDrop(comp, chunk, id, pend)
  local ct, cl, tp, ids = ownTail(redis.call('HGET', K.orders, tailField(comp)))
  if chunk == ct then
    ids = cut(ids, id)
    if pend and not (ids == '' and cl == ct) then
      return tailField(comp), hex(ct) .. '|' .. hex(cl) .. '|' .. encPtr(tp, ct - 1, cl) .. '|' .. ids
    end
    return putTail(comp, ct, cl, tp, ids)
  end
  local field = ownField(comp, chunk)
  local v = redis.call('HGET', K.orders, field)
  if not v then return end
  local p, n, list = sealedOf(v, chunk)
  list = cut(list, id)
  if list ~= '' then
    redis.call('HSET', K.orders, field, encSealed(chunk, p, n, cl, list))
    return
  end
  redis.call('HDEL', K.orders, field)
  local lowest = chunk == cl
  if lowest then
    cl = n
  else
    local pf = ownField(comp, p)
    local pp, _, pl = sealedOf(redis.call('HGET', K.orders, pf), p)
    redis.call('HSET', K.orders, pf, encSealed(p, pp, n, cl, pl))
  end
  if n < ct then
    -- (the next number after the lowest points back as '' either way)
    if not (lowest and n == chunk + 1) then
      local nf = ownField(comp, n)
      local _, nn, nl = sealedOf(redis.call('HGET', K.orders, nf), n)
      redis.call('HSET', K.orders, nf, encSealed(n, p, nn, cl, nl))
    end
    if not lowest then return end -- the tail stays as it was
  else
    tp = p
  end
  putTail(comp, ct, cl, tp, ids)
end

-- OWNPROBE is how many chunk numbers past a page cursor's chunk, emptied
-- since, ownChunks tries before it walks from the lowest chunk.
local OWNPROBE = 32

-- ownChunks calls f(chunk, list) for each chunk of Scale comp's own index
-- from chunk from (nil: its lowest) up to its tail, with list the chunk's
-- ids ("id,id,…,"), until f returns true. It returns the tail's ct and the
-- sealed chunks it read, lowest first. A cursor's chunk that has emptied
-- since is looked for among the next OWNPROBE numbers, then by a walk
-- from the lowest, which reads only chunks that hold orders.
local function ownChunks(comp, from, f)
  local ct, cl, _, ids = ownTail(redis.call('HGET', K.orders, tailField(comp)))
  -- a chunk past the tail was named before the index emptied: start over
  if not from or from > ct then from = cl end
  local chunk, read = cl, {}
  if from > cl then
    -- the cursor's chunk, or one of the next few if it has emptied since;
    -- past those, the walk from the lowest
    for x = from, math.min(from + OWNPROBE, ct) do
      if x == ct or redis.call('HEXISTS', K.orders, ownField(comp, x)) == 1 then
        chunk = x
        break
      end
    end
  end
  while chunk < ct do
    local v = redis.call('HGET', K.orders, ownField(comp, chunk))
    if not v then error('dispatch: own index of ' .. comp .. ' lost chunk ' .. hex(chunk)) end
    local _, n, list = sealedOf(v, chunk)
    read[#read + 1] = chunk
    if chunk >= from and f(chunk, list) then return ct, read end
    if n <= chunk then error('dispatch: own index of ' .. comp .. ' loops at chunk ' .. hex(chunk)) end
    chunk = n
  end
  f(ct, ids)
  return ct, read
end

-- ownOutstanding calls f(oid, o) for each order of Scale comp's own index
-- that is still assigned to comp (o its decoded record), in order of
-- assignment, and returns the sealed chunks it read, for ownClear.
local function ownOutstanding(comp, f)
  local _, read = ownChunks(comp, nil, function(_, v)
    for oid in string.gmatch(v, '([^,]+),') do
      local o = getOrder(oid)
      if o and o.st == 'a' and o.comp == comp then f(oid, o) end
    end
  end)
  return read
end

-- ownClear removes Scale comp's own index: its tail and the sealed chunks
-- of the whole walk (ownOutstanding).
local function ownClear(comp, read)
  local fields = {tailField(comp)}
  for _, chunk in ipairs(read) do fields[#fields + 1] = ownField(comp, chunk) end
  callMany('HDEL', K.orders, fields, 1)
end

-- taken marks Scale record c as read before a batch gives it orders: its
-- outstanding count then (out0), for saveAssigned.
local function taken(c)
  c.out0 = c.out
  return c
end

-- saveAssigned saves the Scales that orders were just given to (first, in
-- the order first picked; cur their records, read with taken). Each was
-- eligible before and only its orderCount has changed: its record stays,
-- it moves from elig and lex to load only when it reached its maxOrders,
-- and the room of the pool (meta r) falls by the orders given to Scales
-- with a maxOrders. With eligDone the caller has updated elig.
local function saveAssigned(first, cur, eligDone)
  if eligDone then
    -- (nothing to do unless a Scale has a maxOrders)
    local any = false
    for _, id in ipairs(first) do
      if cur[id].max > 0 then any = true; break end
    end
    if not any then return end
  end
  local load, add, full = {}, {}, {}
  for _, id in ipairs(first) do
    local c = cur[id]
    local n = count(c)
    if c.max > 0 then
      agg.r = agg.r - (c.out - c.out0)
    end
    if c.max > 0 and n >= c.max then
      full[#full + 1] = id
      load[#load + 1] = n
      load[#load + 1] = id
    elseif not eligDone then
      add[#add + 1] = n
      add[#add + 1] = id
    end
  end
  callMany('ZADD', K.load, load, 2)
  callMany('ZREM', K.lex, full, 1)
  if not eligDone then
    callMany('ZADD', K.elig, add, 2)
    callMany('ZREM', K.elig, full, 1)
  end
end

-- release ends assigned order o (id) in state st at now: the order record,
-- its Scale's own index and the retention queue; the order and the own
-- tail it leaves share one HSET (they share K.orders). The caller updates
-- the Scale (c, its record as cached) and saves it.
local function release(id, o, c, st, now, ret)
  local tf, tv
  if c then
    c.out = c.out - 1
    tf, tv = ownDrop(o.comp, tonumber(o.chunk, 16), id, true)
  end
  o.st, o.done = st, fmt(now)
  if tf then
    redis.call('HSET', K.orders, id, encOrder(o), tf, tv)
  else
    redis.call('HSET', K.orders, id, encOrder(o))
  end
  queuePush(K.oexp, {fmt(now + ret) .. '|' .. id})
end

-- ownAppend puts orders 1..n, assigned to comps[i], at the tails of their
-- Scales' own index (first lists the Scales in the order first picked,
-- ids[io + i] names order i), sealing a tail into its chunk whenever it holds
-- OWN bytes of ids. Returns each order's chunk (hexadecimal) and the HSET
-- field/value list for K.orders, which the caller writes. It runs once per
-- Scale a batch touches, so it keeps per-Scale work small: the orders of a
-- Scale are chained by index (no table per Scale), and the new ids join
-- the tail as it was read, header and all.
local function ownAppend(comps, first, n, ids, io)
  local head, last, nxt, chunkOf, ownKV, pend = {}, {}, newList(n), newList(n), {}, {}
  for i = 1, n do
    local id = comps[i]
    if head[id] then nxt[last[id]] = i else head[id] = i end
    last[id] = i
  end
  local tf = {}
  for j, id in ipairs(first) do tf[j] = tailField(id) end
  local tails = hmgetList(K.orders, tf)
  for j, id in ipairs(first) do
    -- the tail "ct|cl|p|ids": ct ends before a, cl before b, the ids
    -- start after hl
    local v = tails[j] or '0|0||'
    local a = string.find(v, '|', 1, true)
    local b = string.find(v, '|', a + 1, true)
    local hl = string.find(v, '|', b + 1, true)
    local chunk = string.sub(v, 1, a - 1)
    -- the new ids wait in pend (np of them, len the tail's bytes of ids
    -- with them) and join the tail in one concatenation: a string per
    -- order would cost Lua an allocation and a hash each
    local len, np, i = #v - hl, 0, head[id]
    while i do
      if len >= OWN then
        -- sealed as "p||ids": the tail's p, written for the same chunk
        -- number, and the new tail after it
        local ct = tonumber(chunk, 16)
        local sealed = string.sub(v, hl + 1)
        if np > 0 then sealed = sealed .. table.concat(pend, ',', 1, np) .. ',' end
        ownKV[#ownKV + 1] = ownField(id, ct)
        ownKV[#ownKV + 1] = string.sub(v, b + 1, hl) .. '|' .. sealed
        chunk = hex(ct + 1)
        v = chunk .. string.sub(v, a, b) .. '|'
        a, b, hl = #chunk + 1, #v - 1, #v
        len, np = 0, 0
      end
      np = np + 1
      local oid = ids[io + i]
      pend[np] = oid
      len = len + #oid + 1
      chunkOf[i] = chunk
      i = nxt[i]
    end
    if np > 0 then v = v .. table.concat(pend, ',', 1, np) .. ',' end
    ownKV[#ownKV + 1] = tf[j]
    ownKV[#ownKV + 1] = v
  end
  return chunkOf, ownKV
end

-- ownAppendOne is ownAppend of one order, id, assigned to comp: it
-- returns the order's chunk and the field/value pairs to write (the tail,
-- and a sealed chunk before it when the tail was full), which the caller
-- adds to its records' HSET. tail is the tail's value if the caller has
-- read it (false: none yet), nil if not.
local function ownAppendOne(comp, id, tail)
  local tf = tailField(comp)
  local v = tail
  if v == nil then v = redis.call('HGET', K.orders, tf) end
  v = v or '0|0||'
  local a = string.find(v, '|', 1, true)
  local b = string.find(v, '|', a + 1, true)
  local hl = string.find(v, '|', b + 1, true)
  local chunk = string.sub(v, 1, a - 1)
  if #v - hl < OWN then return chunk, tf, v .. id .. ',' end
  local ct = tonumber(chunk, 16)
  local nc = hex(ct + 1)
  return nc, tf, nc .. string.sub(v, a, b) .. '|' .. id .. ',',
    ownField(comp, ct), string.sub(v, b + 1, hl) .. '|' .. string.sub(v, hl + 1)
end

-- ownFront reads up to max of Scale comp's oldest orders from its own index
-- (a chunk's ids in order, chunks from the lowest), changing nothing. It
-- returns their ids and a function that takes them out of the index: the
-- sealed chunks it emptied go, a chunk it took in part keeps the rest and
-- becomes the lowest. It reads only the chunks it takes from, so a Scale of
-- millions of orders gives up a few at a time in proportion to the few.
local function ownFront(comp, max)
  local ids, gone = {}, {}
  local tv = redis.call('HGET', K.orders, tailField(comp))
  if not tv or max <= 0 then return ids, function() end end
  local ct, cl, tp, tids = ownTail(tv)
  -- take reads up to want ids from list and returns what is left of it.
  local function take(list, want)
    local at = 1
    while want > 0 do
      local j = string.find(list, ',', at, true)
      if not j then break end
      ids[#ids + 1] = string.sub(list, at, j - 1)
      at, want = j + 1, want - 1
    end
    return string.sub(list, at)
  end
  local chunk, part = cl, nil
  while chunk < ct and #ids < max do
    local v = redis.call('HGET', K.orders, ownField(comp, chunk))
    if not v then error('dispatch: own index of ' .. comp .. ' lost chunk ' .. hex(chunk)) end
    local p, n, list = sealedOf(v, chunk)
    local rest = take(list, max - #ids)
    if rest ~= '' then
      part = {chunk = chunk, p = p, n = n, rest = rest}
      break
    end
    gone[#gone + 1] = ownField(comp, chunk)
    chunk = n
  end
  local trest = tids
  if not part and chunk >= ct then trest = take(tids, max - #ids) end
  return ids, function()
    callMany('HDEL', K.orders, gone, 1)
    if part then
      -- (its pointer back now lies below the lowest chunk: written '')
      redis.call('HSET', K.orders, ownField(comp, part.chunk), encSealed(part.chunk, part.p, part.n, part.chunk, part.rest))
      return putTail(comp, ct, part.chunk, tp, tids)
    end
    -- every chunk below the one reached emptied: it is the lowest now
    putTail(comp, ct, math.min(chunk, ct), tp, trest)
  end
end
