-- own.lua: the Scales' own indexes and what a batch's picks change in the
-- Scales. It follows records.lua in the library (functions.go).

-- The own index of a Scale lists its outstanding orders, oldest first, in
-- chunks of entries "e,e,…,". An entry is an order's id, or a token
-- "~ref.k" (both hexadecimal) that stands for the k orders that a batch
-- named after its first order (layout 8, batchid.go) gave that Scale: its
-- orders there in the batch's order, as its assignments (PFIELD .. ref,
-- records.lua) name them. An order's record says which entry holds it
-- (ownAt): its chunk, and whether its batch's token (an order of such a
-- batch that has never moved) or its own id. A dispatch of such a batch
-- then costs the index one entry per Scale, not one per order.
--
-- Field tailField(compId) holds the tail, "ct|cl|p|e,e,…,": ct the
-- number of the tail chunk, cl the lowest chunk that holds an order, p the
-- chunk before the tail (all hexadecimal). (A tail written before own24
-- may carry ".w" after p, the orders its tokens stood for: it is read and
-- ignored, and goes when a drop rewrites the tail or it is sealed.) Field
-- ownField(compId, chunk), OFIELD .. "compId chunk", holds a sealed
-- chunk below the tail, "p|n|e,e,…,", with p and n the chunks before and
-- after it; it goes when it empties. The sealed chunks that hold orders
-- form a list from cl to the tail through n and back through p, so a walk
-- reads only chunks that hold orders, however many emptied in between (a
-- Scale with one order outstanding for good while millions pass). A
-- pointer to the next number (p = chunk-1, n = chunk+1, the usual case) is
-- written '', and so is one of a lowest chunk, which has none before it.
-- A tail of OWN bytes of entries or more is sealed before the next id
-- joins it, and a tail whose value (its header too) is OWN bytes or more
-- before the next token joins it, so that appending to it stays cheap: a
-- chunk holds fewer than OWN / 2 ids and OWN / 5 tokens before its last
-- entry (a token, "~ref.k," of 5 bytes or more, stands for the orders of
-- one batch on that Scale). A token joins a tail as one concatenation,
-- with no parse: the tail's header does not change (until own24 it
-- carried w, the orders its tokens stood for, which sealed it at OWN
-- orders too and was parsed and rebuilt at every token, 0.8k
-- instructions per order of a batch of 100 over 16 Scales). A token of
-- OWNK orders or more seals its tail as it joins (ownPend.OWNK, below), so
-- that a chunk stands for a bounded number of orders. A dispatch
-- touches only the tail: one read and one write per Scale. An index that
-- empties goes, and the Scale's chunks count from 0 again.
local OWN = 256

-- ownPend.OWNK: a token of OWNK orders or more seals its tail as soon as it has
-- joined it, so that a chunk stands for fewer than OWN / 5 tokens of fewer
-- than OWNK orders each, plus one batch's orders on that Scale. A page
-- whose cursor's order has left its chunk, and the entries around it too
-- (the cursor's anchors), starts again at the chunk's start
-- (scale_orders.lua), so this bounds the orders such a page lists again.
-- The token's k is at hand as it joins: no tail is parsed for it.
-- A batch of 100 over 16 Scales (k about 6) seals nothing this way; one of
-- 1,000 over 16 seals each of its Scales' tails, one chunk field per Scale.
-- (It is a field of ownPend, the pending tails of a call, described below:
-- the library is near Lua's limit of locals.)
local ownPend = {PE = 5, OWNK = 16}

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

-- ownTail reads a tail (nil: none yet): ct, cl, p and the entries.
local function ownTail(v)
  if not v then return 0, 0, -1, '' end
  local ct, cl, p, ids = string.match(v, '^(%x+)|(%x+)|(%x*)%.?%x*|(.*)$')
  ct, cl = tonumber(ct, 16), tonumber(cl, 16)
  return ct, cl, ptr(p, ct - 1), ids
end

-- sealedOf reads sealed chunk x: p, n and the entries.
local function sealedOf(v, x)
  local p, n, ids = string.match(v, '^(%x*)|(%x*)|(.*)$')
  return ptr(p, x - 1), ptr(n, x + 1), ids
end

local function encSealed(x, p, n, cl, ids)
  return encPtr(p, x - 1, cl) .. '|' .. encPtr(n, x + 1, cl) .. '|' .. ids
end

-- cut takes order id out of a list "e,e,…,": its own entry, or with ref
-- one order of token ref's, which goes with its last.
local function cut(list, id, ref)
  local s = ',' .. list
  if ref then
    local p = string.find(s, ',~' .. ref .. '.', 1, true)
    if not p then return list end
    local q = p + #ref + 3 -- (where its k begins)
    local e = string.find(s, ',', q, true)
    local k = tonumber(string.sub(s, q, e - 1), 16)
    if k > 1 then return string.sub(s, 2, q - 1) .. hex(k - 1) .. string.sub(s, e) end
    return string.sub(s, 2, p) .. string.sub(s, e + 1)
  end
  local p = string.find(s, ',' .. id .. ',', 1, true)
  if p then s = string.sub(s, 1, p) .. string.sub(s, p + #id + 2) end
  return string.sub(s, 2)
end

-- ownAt reads where assigned order o is in its Scale's own index: the
-- chunk, and the ref of the token that holds it (nil: its own id). An
-- order of a batch of several that has never moved is its batch's token's
-- unless its chunk is written '.' and the chunk (a batch named by a UUID,
-- which keeps one id per order), and an order that moved is its own.
local function ownAt(o)
  local c = o.chunk
  if string.byte(c, 1) == 46 then return tonumber(string.sub(c, 2), 16) end
  if o.ref ~= '' and o.mv == 0 then return tonumber(c, 16), o.ref end
  return tonumber(c, 16)
end

-- putTail writes Scale comp's tail, or removes it when the index is empty.
-- With pend, a tail that stays is not written: putTail returns its field
-- and value.
local function putTail(comp, ct, cl, p, ids, pend)
  if ids == '' and cl == ct then
    redis.call('HDEL', K.orders, tailField(comp))
    return
  end
  local v = hex(ct) .. '|' .. hex(cl) .. '|' .. encPtr(p, ct - 1, cl) .. '|' .. ids
  if pend then return tailField(comp), v end
  redis.call('HSET', K.orders, tailField(comp), v)
end

-- ownDrop takes order id out of chunk chunk of Scale comp's own index (with
-- ref: out of that batch's token, ownAt). A sealed chunk that empties goes:
-- the chunks before and after it point to each other, and when it was the
-- lowest, cl moves to the one after it. With pend, an order in the tail
-- that leaves orders in the index is not written: ownDrop returns the
-- tail's field and value, which the caller writes with its own fields
-- (release).
local function ownDrop(comp, chunk, id, ref, pend)
  local ct, cl, tp, ids = ownTail(redis.call('HGET', K.orders, tailField(comp)))
  if chunk == ct then
    return putTail(comp, ct, cl, tp, cut(ids, id, ref), pend)
  end
  local field = ownField(comp, chunk)
  local v = redis.call('HGET', K.orders, field)
  if not v then return end
  local p, n, list = sealedOf(v, chunk)
  list = cut(list, id, ref)
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

-- entryOrders appends to ids and recs the orders that entry e of chunk x
-- of Scale comp's own index stands for and that are still assigned there
-- through it (their ids and records, decOrder), in order: an id's order,
-- or a token's orders, which its batch's assignments list; with after, a
-- token's orders that its assignments list after order after's, or none
-- and false when they do not give order after to comp.
local function entryOrders(comp, x, e, ids, recs, after)
  local ref, cand = nil, nil
  if string.byte(e, 1) == 126 then -- '~', a token
    ref = string.match(e, '^~(%x+)%.')
    cand = {}
    -- The orders whose compId is comp (records.lua's namedPairs).
    namedPairs(redis.call('HGET', K.orders, PFIELD .. ref) or '', function(oid, c)
      if c == comp then cand[#cand + 1] = oid end
    end)
    if after then
      local j = nil
      for i = 1, #cand do
        if cand[i] == after then j = i; break end
      end
      if not j then return false end
      local rest = {}
      for i = j + 1, #cand do rest[#rest + 1] = cand[i] end
      cand = rest
    end
  else
    cand = {e}
  end
  for i, v in ipairs(hmgetList(K.orders, cand)) do
    local o = v and decOrder(v, cand[i])
    if o and o.st == 'a' and o.comp == comp then
      local at, r = ownAt(o)
      if at == x and r == ref then
        ids[#ids + 1] = cand[i]
        recs[#recs + 1] = o
      end
    end
  end
end

-- ownChunks calls f(chunk, each, list, tail) for each chunk of Scale comp's
-- own index from chunk from (nil: its lowest) up to its tail (tail true),
-- until f returns true; list is the chunk's entries "e,e,…,", and each(g) calls
-- g(orderId, record) for the orders they stand for that are still
-- assigned there through them, in order (entryOrders), until g returns
-- true, and then returns true. each(g, ref, id) starts at the token of
-- ref instead, with its orders after order id (a cursor's order that has
-- left the token), or returns false and calls g for none when the chunk
-- holds no token of ref that was given order id. each(g, nil, e, past)
-- starts at entry e ("~ref." for a token, or an order's own id), or just
-- past it with past, or returns false when the chunk holds no entry e.
-- An entry is read only when g gets that far, and a chunk
-- stands for a bounded number of orders (OWN, ownPend.OWNK). It returns the tail's ct
-- and the sealed chunks it read, lowest first. A cursor's chunk that has emptied
-- since is looked for among the next OWNPROBE (32) numbers, then by a walk
-- from the lowest, which reads only chunks that hold orders.
local function ownChunks(comp, from, f)
  local OWNPROBE = 32
  local ct, cl, _, ids = ownTail(redis.call('HGET', K.orders, tailField(comp)))
  local function orders(x, list)
    return function(g, ref, after, past)
      local l = list
      if not ref and after then
        -- (entry after, which is there once: a token by its "~ref.", an
        -- id whole; from it, or from the entry past it)
        local tok = string.byte(after, 1) == 126
        local p = string.find(',' .. l, ',' .. after .. (tok and '' or ','), 1, true)
        if not p then return false end
        if not past then
          l = string.sub(l, p)
        elseif tok then
          l = string.sub(l, string.find(l, ',', p, true) + 1)
        else
          l = string.sub(l, p + #after + 1)
        end
        after = nil
      elseif ref then
        local p = string.find(',' .. l, ',~' .. ref .. '.', 1, true)
        if not p then return false end
        l = string.sub(l, p)
      end
      for e in string.gmatch(l, '([^,]+),') do
        local oids, recs = {}, {}
        if entryOrders(comp, x, e, oids, recs, after) == false then return false end
        after = nil
        for i = 1, #oids do
          if g(oids[i], recs[i]) then return true end
        end
      end
    end
  end
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
    if chunk >= from and f(chunk, orders(chunk, list), list) then return ct, read end
    if n <= chunk then error('dispatch: own index of ' .. comp .. ' loops at chunk ' .. hex(chunk)) end
    chunk = n
  end
  f(ct, orders(ct, ids), ids, true)
  return ct, read
end

-- ownOutstanding calls f(oid, o) for each order of Scale comp's own index
-- that is still assigned to comp (o its decoded record), in order of
-- assignment, and returns the sealed chunks it read, for ownClear.
local function ownOutstanding(comp, f)
  local _, read = ownChunks(comp, nil, function(_, each) each(f) end)
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
    -- (nothing to do unless a Scale has a maxOrders; the loops index
    -- first: ipairs's iterator is a C call a Scale)
    local any = false
    for j = 1, #first do
      if cur[first[j]].max > 0 then any = true; break end
    end
    if not any then return end
  end
  local load, add, full = {}, {}, {}
  for j = 1, #first do
    local id = first[j]
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
    local at, ref = ownAt(o)
    tf, tv = ownDrop(o.comp, at, id, ref, true)
  end
  -- (a finished order's chunk says nothing: no '.' to keep)
  if string.byte(o.chunk, 1) == 46 then o.chunk = string.sub(o.chunk, 2) end
  o.st, o.done = st, fmt(now)
  if tf then
    redis.call('HSET', K.orders, id, encOrder(o), tf, tv)
  else
    redis.call('HSET', K.orders, id, encOrder(o))
  end
  queuePush(K.oexp, {fmt(now + ret) .. '|' .. id})
end

-- hexSmall[x] is hex(x) for the numbers below 2048 that hexSmall.of(x)
-- has made (a token's k; `hexSmall[k] or hexSmall.of(k)`): string.format
-- costs a dispatch of 100 orders over 16 Scales some 0.5k instructions per
-- order in ownAppendTok alone. A memo read in place, not a function: a
-- number met before is a look-up, where a call from Lua costs some 300
-- instructions (tab27). (The functions' Lua has no setmetatable.)
local hexSmall = {}
function hexSmall.of(x)
  local s = hex(x)
  if x < 2048 then hexSmall[x] = s end
  return s
end

-- seal seals Scale comp's tail v, whose entries and then more (entries,
-- or '') fill its chunk: the chunk keeps v's p (without a w) and its
-- number, and the tail goes on in the next one. It returns the next
-- chunk's number (hexadecimal), the new tail's header up to its p
-- ("ct|cl|", with p '': the chunk just sealed), and the sealed chunk's
-- field and value, which the caller writes. The three appends below (ids,
-- tokens, one id) share it; it runs once per OWN bytes of a tail, so it
-- reads the tail its own way.
local function seal(comp, v, more)
  local ct, cl, p, list = string.match(v, '^(%x+)|(%x+)|(%x*)%.?%x*|(.*)$')
  local nc = hex(tonumber(ct, 16) + 1)
  return nc, nc .. '|' .. cl .. '|', OFIELD .. comp .. ' ' .. ct, p .. '||' .. list .. more
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
    local v = tails[j] or '0|0||'
    -- the tail "ct|cl|p|ids": ct ends before a, the ids start after hl
    local a = string.find(v, '|', 1, true)
    local hl = string.find(v, '|', string.find(v, '|', a + 1, true) + 1, true)
    local chunk = string.sub(v, 1, a - 1)
    -- the new ids wait in pend (np of them, len the tail's bytes of ids
    -- with them) and join the tail in one concatenation: a string per
    -- order would cost Lua an allocation and a hash each
    local len, np, i = #v - hl, 0, head[id]
    while i do
      if len >= OWN then
        local more, h, k = '', nil, #ownKV
        if np > 0 then more = table.concat(pend, ',', 1, np) .. ',' end
        chunk, h, ownKV[k + 1], ownKV[k + 2] = seal(id, v, more)
        v = h .. '|'
        hl = #v
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

-- ownAppendTok puts a batch named after its first order (ref its ref) at
-- the tails of its Scales' own indexes: one token per Scale (first lists
-- them in the order first picked, cur their records, read with taken),
-- "~ref.k" with k the orders it gave that Scale. A tail whose value is OWN
-- bytes or more is sealed first; any other takes the token at its end, its
-- header as read (only its chunk is read from it). Returns, by compId, the
-- head of the records of the orders it gave each Scale, head .. compId ..
-- '|' .. chunk .. '|' (dispatch.lua's: the records name their Scale and
-- their token's chunk, hexadecimal, ownAt), and the HSET field/value list
-- for K.orders, which the caller writes. Its work is per Scale, not per
-- order: the token joins its tail in the concatenation that makes the new
-- tail (no string of its own), after "~ref." made once a batch, and each
-- Scale's record head is made here, in the loop that finds its chunk.
local function ownAppendTok(first, cur, ref, head)
  local tf, at, kv, pre = {}, {}, {}, '~' .. ref .. '.'
  -- (tailField's OFIELD .. comp, inline: a Lua call less a Scale)
  for j = 1, #first do tf[j] = OFIELD .. first[j] end
  local tails = hmgetList(K.orders, tf)
  for j = 1, #first do
    local id = first[j]
    local v, c = tails[j], cur[id]
    local k = c.out - c.out0
    local hk, chunk, x = hexSmall[k] or hexSmall.of(k), '0', #kv
    if not v then
      v = '0|0||' .. pre .. hk .. ','
    elseif #v < OWN then
      chunk = string.match(v, '^%x+')
      v = v .. pre .. hk .. ','
    else
      local h
      chunk, h, kv[x + 1], kv[x + 2] = seal(id, v, '')
      x = x + 2
      v = h .. '|' .. pre .. hk .. ','
    end
    if k >= ownPend.OWNK then
      -- (the token stays in chunk; the tail goes on, empty, in the next)
      local _, h
      _, h, kv[x + 1], kv[x + 2] = seal(id, v, '')
      x = x + 2
      v = h .. '|'
    end
    at[id] = head .. id .. '|' .. chunk .. '|'
    kv[x + 1], kv[x + 2] = tf[j], v
  end
  return at, kv
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
  if not v then return '0', tf, '0|0||' .. id .. ',' end
  local a = string.find(v, '|', 1, true)
  local hl = string.find(v, '|', string.find(v, '|', a + 1, true) + 1, true)
  if #v - hl < OWN then return string.sub(v, 1, a - 1), tf, v .. id .. ',' end
  local nc, h, sf, sv = seal(comp, v, '')
  return nc, tf, h .. '|' .. id .. ',', sf, sv
end

-- ownPend is the own index's tails of a call of several batches
-- (dispatch_many.lua): each Scale's tail is read at most once in the call,
-- its new entries are kept in Lua across the call's batches, and every
-- tail, and any chunk sealed meanwhile, is written once at the call's end
-- (flush). Each append gives the tail, the chunks and the orders' chunks
-- exactly what ownAppend and ownAppendTok give them, batch after batch;
-- only the writes wait. Nothing else that a dispatch runs reads a tail
-- (settling, the sweep and the strategies touch no own index) but a
-- single order's, which writes its own tail with its records
-- (ownAppendOne): the call writes the pending tails before it
-- (dispatch.lua), as holding a tail for one order costs more than it
-- saves. A tail there is a list (positional, which Lua fills and reads
-- cheaper than named fields): {ct, v, lim, len, ne, new entries…}: ct the
-- tail chunk (hexadecimal), v the tail as read ("0|0||" for none; its
-- header as seal made it, "ct|cl||", once sealed in the call), len the
-- bytes of v and the new entries (each with its ','), ne the new entries,
-- from index PE + 1, and lim the len at which the tail's entries reach OWN
-- bytes (OWN and the bytes of v's header, up to and with its third '|'),
-- which only a batch of ids needs (ownAppend's rule): false until one
-- does (ownPend.read). The tail to write is v and the new entries: P
-- reads a tail's header once at most (a token needs only its chunk, seal
-- parses it once per chunk). Every tail P holds has at least one new
-- entry, but one sealed after a token of OWNK orders (ownPend.tok).
-- (ownPend is declared above, with OWNK.)

-- ownPend.new returns the pending tails of a call: by compId, and in the
-- order first read; and kv, the list of the records that each batch of
-- the call writes, from 1 (dispatch.lua), and at (ownPend.tok).
function ownPend.new() return {t = {}, order = {}, sealed = {}, kv = {}, at = {}} end

-- ownPend.lim reads tail v's chunk and its lim: OWN and the bytes of its
-- header, up to and with its third '|' (a tail written before own24 may
-- carry ".w" after p).
function ownPend.lim(v)
  local ct, bl = string.match(v, '^(%x+)|%x+|%x*%.?%x*|()')
  return ct, OWN + bl - 1
end

-- ownPend.read brings the tails of Scales first that P does not hold yet
-- into it, with one HMGET, in the order read (P.order): a tail read is
-- matched for its chunk alone, and with ids (a batch of ids) for its lim
-- too (ownPend.lim), once, also in a tail read earlier in the call by a
-- batch of tokens. A tail keeps its header as read.
function ownPend.read(P, first, ids)
  local T, miss, tf, m = P.t, nil, nil, 0
  for j = 1, #first do
    local id = first[j]
    local s = T[id]
    if not s then
      if m == 0 then miss, tf = {}, {} end
      m = m + 1
      miss[m], tf[m] = id, OFIELD .. id -- (tailField, inline)
    elseif ids and not s[3] then
      local _
      _, s[3] = ownPend.lim(s[2])
    end
  end
  if m == 0 then return end
  local vs, order = hmgetList(K.orders, tf), P.order
  for j = 1, m do
    local id, v, ct, lim = miss[j], vs[j], '0', nil
    if not v then
      -- (no tail yet: v is a first chunk's header alone)
      v = '0|0||'
      lim = OWN + #v
    elseif ids then
      ct, lim = ownPend.lim(v)
    else
      ct, lim = string.match(v, '^%x+'), false
    end
    T[id] = {ct, v, lim, #v, 0}
    order[#order + 1] = id
  end
end

-- ownPend.seal seals Scale comp's tail s into its chunk with seal, its
-- entries and the new ones, and holds the sealed chunk for flush.
function ownPend.seal(P, comp, s)
  local PE, ne, x = ownPend.PE, s[5], #P.sealed
  local more, nc, h = ne > 0 and table.concat(s, ',', PE + 1, PE + ne) .. ',' or '', nil, nil
  nc, h, P.sealed[x + 1], P.sealed[x + 2] = seal(comp, s[2], more)
  s = {nc, h .. '|', OWN + #h + 1, #h + 1, 0}
  P.t[comp] = s
  return s
end

-- ownPend.ids is ownAppend in call P: it returns each order's chunk.
function ownPend.ids(P, comps, first, n, ids, io)
  ownPend.read(P, first, true)
  local T, PE, chunkOf = P.t, ownPend.PE, newList(n)
  for i = 1, n do
    local comp = comps[i]
    local s = T[comp]
    if s[4] >= s[3] then s = ownPend.seal(P, comp, s) end
    local oid, ne = ids[io + i], s[5] + 1
    s[PE + ne], s[5], s[4] = oid, ne, s[4] + #oid + 1
    chunkOf[i] = s[1]
  end
  return chunkOf
end

-- ownPend.tok is ownAppendTok in call P: it returns each Scale's record
-- head (head .. compId .. '|' .. chunk .. '|'), by compId.
function ownPend.tok(P, first, cur, ref, head)
  ownPend.read(P, first)
  -- (at is the call's, P.at: a Scale's record head by compId, rewritten
  -- for the Scales of each batch, which reads no other)
  local T, PE, at, OWNK, pre = P.t, ownPend.PE, P.at, ownPend.OWNK, '~' .. ref .. '.'
  for j = 1, #first do
    local id = first[j]
    local s = T[id]
    -- (the tail's value: its header, as read or made, and its entries)
    if s[4] >= OWN then s = ownPend.seal(P, id, s) end
    local c = cur[id]
    local k = c.out - c.out0
    local e, ne = pre .. (hexSmall[k] or hexSmall.of(k)), s[5] + 1
    s[PE + ne], s[5], s[4] = e, ne, s[4] + #e + 1
    at[id] = head .. id .. '|' .. s[1] .. '|'
    if k >= OWNK then ownPend.seal(P, id, s) end
  end
  return at
end

-- ownPend.flush writes the tails of call P and the chunks it sealed, in
-- one HSET: a tail read keeps its header as read.
function ownPend.flush(P)
  local kv, T, PE = P.sealed, P.t, ownPend.PE
  local order = P.order
  for j = 1, #order do
    local comp = order[j]
    local s = T[comp]
    local v, ne = s[2], s[5]
    -- (a tail sealed after a token of OWNK orders may have no new entry;
    -- the rest are joined to v in one concatenation)
    if ne > 0 then v = v .. table.concat(s, ',', PE + 1, PE + ne) .. ',' end
    kv[#kv + 1] = OFIELD .. comp -- (tailField, inline)
    kv[#kv + 1] = v
  end
  hsetMany(K.orders, kv)
end

-- ownFront reads up to max of Scale comp's oldest orders from its own index
-- (an entry's orders in order, entries in order, chunks from the lowest),
-- changing nothing. It returns their ids, their records (decOrder) and a
-- function that takes them out of the index: the sealed chunks it emptied
-- go, a chunk it took in part keeps the rest and becomes the lowest, and a
-- token it took in part keeps the orders left. It reads only the chunks
-- it takes from, so a Scale of millions of orders gives up a few at a time
-- in proportion to the few (and to a batch, for a token).
local function ownFront(comp, max)
  local ids, recs, gone = {}, {}, {}
  local tv = redis.call('HGET', K.orders, tailField(comp))
  if not tv or max <= 0 then return ids, recs, function() end end
  local ct, cl, tp, tids = ownTail(tv)
  -- take takes up to max orders in all from list, the entries of chunk x,
  -- and returns what is left of it.
  local function take(x, list)
    local at = 1
    while #ids < max do
      local j = string.find(list, ',', at, true)
      if not j then break end
      local e = string.sub(list, at, j - 1)
      entryOrders(comp, x, e, ids, recs)
      local left = #ids - max
      if left > 0 then
        -- a token taken in part: its first orders go, the rest stay
        for _ = 1, left do
          ids[#ids], recs[#recs] = nil, nil
        end
        return string.match(e, '^~%x+%.') .. hex(left) .. string.sub(list, j)
      end
      at = j + 1
    end
    return string.sub(list, at)
  end
  local chunk, part = cl, nil
  while chunk < ct and #ids < max do
    local v = redis.call('HGET', K.orders, ownField(comp, chunk))
    if not v then error('dispatch: own index of ' .. comp .. ' lost chunk ' .. hex(chunk)) end
    local p, n, list = sealedOf(v, chunk)
    local rest = take(chunk, list)
    if rest ~= '' then
      part = {chunk = chunk, p = p, n = n, rest = rest}
      break
    end
    gone[#gone + 1] = ownField(comp, chunk)
    chunk = n
  end
  local trest = tids
  if not part and chunk >= ct then trest = take(ct, tids) end
  return ids, recs, function()
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
