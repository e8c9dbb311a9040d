-- records.lua: the pool's records (orders, batches, refs, Idempotency-Keys)
-- in their one hash, and the retention queues that end their windows. It
-- follows lib.lua in the library (functions.go's libFiles).

-- The pool's records share one hash, K.orders (layout 6): field orderId
-- holds an order record, and fields that begin with '|' (no id holds it)
-- the rest: BFIELD .. batchId a batch record, RFIELD .. ref a batch ref,
-- IFIELD .. key hash an Idempotency-Key (the preamble's prefixes, from
-- keys.go). A single order's lookups are then one HMGET, and its writes
-- one HSET.

-- Orders: "<state><ref>|doneMs|compId|chunk|key", state a (assigned), c
-- (completed), x (cancelled); ref names the batch's ref (RFIELD), chunk
-- (hexadecimal) the chunk of the Scale's own index that holds it, by its
-- batch's token or its id ('.' and the chunk: its id although its batch
-- has a token; own.lua's ownAt); doneMs is empty while
-- assigned; the key comes last, as it may hold '|'. The order of a batch
-- of one has no ref: it holds the batch itself, as a named batch
-- (layout 7, batchid.go) "<state>|doneMs|compId|chunk|:<tag><strategy>|
-- createdMs|firstCompId|key" (createdMs hexadecimal, strategy its code,
-- STRATCODE; firstCompId the Scale the batch gave it, '' while that is
-- compId), else "<state>|doneMs|compId|chunk|batchId|createdMs|key" with a
-- batch record of its own (BFIELD).
local ORDER = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$'
local NAMED = '^:([^|]*)|([^|]*)|([^|]*)|(.*)$'

-- An order that moved to another Scale (a reassign, a lapse, a failure
-- report) carries how often in its head: "<state><ref>+<moves>"; an order
-- that never moved, as a dispatch writes it, has no '+'. decOrder reads
-- the record s of order id (o.id; nil where no view is made of it).
local function decOrder(s, id)
  if not s then return nil end
  local head, done, comp, chunk, key = string.match(s, ORDER)
  local ref, mv = string.match(head, '^.([^+]*)%+?(%d*)$')
  local o = {id = id, st = string.sub(head, 1, 1), ref = ref, mv = tonumber(mv) or 0, done = done,
    comp = comp, chunk = chunk, key = key}
  if ref == '' then
    if string.byte(key, 1) == 58 then -- ':', a named batch
      local first
      o.tag, o.ath, first, o.key = string.match(key, NAMED)
      o.first = first ~= '' and first or comp
    else
      o.bid, o.at, o.key = string.match(key, '^([^|]*)|([^|]*)|(.*)$')
    end
  end
  return o
end

local function encOrder(o)
  local head = o.st .. o.ref
  if o.mv > 0 then head = head .. '+' .. fmt(o.mv) end
  if o.tag then
    return table.concat({head, o.done, o.comp, o.chunk, ':' .. o.tag, o.ath,
      o.first ~= o.comp and o.first or '', o.key}, '|')
  end
  if o.bid then return table.concat({head, o.done, o.comp, o.chunk, o.bid, o.at, o.key}, '|') end
  return table.concat({head, o.done, o.comp, o.chunk, o.key}, '|')
end

local function getOrder(id) return decOrder(redis.call('HGET', K.orders, id), id) end

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

local function getBatch(bid) return redis.call('HGET', K.orders, BFIELD .. bid) end

-- Batch refs: RFIELD .. ref (hexadecimal) -> "batchId|createdMs|orders",
-- what the orders of a batch of several share, for as long as any of them
-- is stored: the last order record to leave takes it along. A batch named
-- after its first order (layout 7, batchid.go) has a ref
-- ":<tag><strategy code>|createdMs in hexadecimal|orders|first orderId"
-- and no batch record: its assignments are PFIELD .. ref,
-- "compId,…,compId,|orderId,…,orderId", its orders' Scales and then their
-- ids in the same order (layout 9: Go sends '|' and the ids joined, and
-- pairs them with the Scales the dispatch answers; Lua makes no pair),
-- which leave with the ref (layout 8: the Scales' own indexes hold such a
-- batch's orders as tokens that read them, own.lua; keys.go).
local function refSplit(v)
  local f = split(v, '|', 4)
  f[3] = tonumber(f[3])
  return f
end

-- refGet returns the batch id, createdMs and order count of ref, or nil.
local function refGet(ref)
  local v = redis.call('HGET', K.orders, RFIELD .. ref)
  if not v then return nil end
  local f = refSplit(v)
  if string.byte(v, 1) == 58 then -- ':', a named batch
    return f[4] .. ':' .. string.sub(f[1], 2, -2), fmt(tonumber(f[2], 16)), f[3]
  end
  return f[1], f[2], f[3]
end

-- refDrop counts an order of ref out: the last one takes the ref along,
-- and a named batch's assignments, which its own-index tokens read
-- (own.lua).
local function refDrop(ref)
  if ref == '' then return end -- (a batch of one has none)
  local v = redis.call('HGET', K.orders, RFIELD .. ref)
  if not v then return end
  local f = refSplit(v)
  if f[3] <= 1 then
    redis.call('HDEL', K.orders, RFIELD .. ref, PFIELD .. ref)
    return
  end
  f[3] = fmt(f[3] - 1)
  redis.call('HSET', K.orders, RFIELD .. ref, table.concat(f, '|'))
end

-- namedPairs calls f(orderId, compId) for each assignment of pv, a named
-- batch's assignments (PFIELD, above), in order.
local function namedPairs(pv, f)
  local m = string.find(pv, ',|', 1, true)
  if not m then return end
  local ci, di = 1, m + 2
  while ci < m do
    local cj = string.find(pv, ',', ci, true) -- (at most m, a ',')
    local dj = string.find(pv, ',', di, true) or #pv + 1
    f(string.sub(pv, di, dj - 1), string.sub(pv, ci, cj - 1))
    ci, di = cj + 1, dj + 1
  end
end

-- namedBatch returns the record of the batch named after order id with
-- tag (batchid.go) from the order's record o (decOrder; nil: none), or nil
-- if o is not of that batch or the batch's window, the retention ret, has
-- passed at now: a batch of one is in o, one of several in o's ref.
local function namedBatch(id, o, tag, now, ret)
  if not o then return nil end
  local tc, ath, v = o.tag, o.ath, nil
  if not tc then
    if o.ref == '' then return nil end
    v = redis.call('HMGET', K.orders, RFIELD .. o.ref, PFIELD .. o.ref)
    -- (',|': assignments of layout 9, not the pairs of an earlier one)
    if not (v[1] and v[2]) or string.byte(v[1], 1) ~= 58 or not string.find(v[2], ',|', 1, true) then
      return nil
    end
    -- (named after its first order: a later order's id and the tag name
    -- no batch)
    local first
    tc, ath, first = string.match(v[1], '^:([^|]*)|([^|]*)|[^|]*|(.*)$')
    if first ~= id then return nil end
  end
  if string.sub(tc, 1, -2) ~= tag then return nil end
  local at = tonumber(ath, 16)
  if at + ret < now then return nil end
  -- (a batch of several: its assignments as kept, which Go reads,
  -- codec.go's decodeBatchOf; pairing 10,000 of them here took a re-sent
  -- call past a client's read timeout)
  return fmt(at) .. '|' .. fmt(at + ret) .. '|' .. STRATNAME[string.sub(tc, -1)] .. '|' ..
    (v and v[2] or id .. ',' .. o.first)
end

-- orderView is an order as replies show it:
-- "state|assignedMs|doneMs|batchId|compId|moves|key".
local function orderView(o)
  local bid, at = o.bid, o.at
  if o.tag then
    bid, at = o.id .. ':' .. string.sub(o.tag, 1, -2), fmt(tonumber(o.ath, 16))
  elseif not bid then
    bid, at = refGet(o.ref)
  end
  return table.concat({o.st, at or '', o.done, bid or '', o.comp, fmt(o.mv), o.key}, '|')
end

-- Idempotency-Keys: IFIELD .. the key's hash (12 bytes) -> the batch id
-- and the request's fingerprint hash (8 bytes), nothing else: the key
-- lives as long as the batch it names, whose record holds the time.
-- idemOf splits such a value into the batch id and the fingerprint hash.
local function idemOf(v) return string.sub(v, 1, -9), string.sub(v, -8) end

-- idemBatch returns the batch id, the fingerprint hash and the batch record
-- (nil if gone) of key hash h, or nil.
local function idemBatch(h)
  local v = redis.call('HGET', K.orders, IFIELD .. h)
  if not v then return nil end
  local bid, fp = idemOf(v)
  return bid, fp, getBatch(bid) or nil
end

-- NEVER is a time no call reaches (2^53 - 1 ms): meta's sw and hd say it
-- when nothing is due.
local NEVER = 9007199254740991

-- The sweep's actions on an expired queue entry (its text after
-- "expiresMs|"). An entry whose record was replaced since (an id reused
-- after it expired) only leaves the queue.
-- dropOrder removes an order done more than ret ago (oexp).
local function dropOrder(id, now, ret)
  local o = getOrder(id)
  if o and not live(o, now, ret) then
    redis.call('HDEL', K.orders, id)
    refDrop(o.ref)
  end
end

-- dropBatch removes a batch record without an Idempotency-Key (bexp).
local function dropBatch(bid, now)
  local b = getBatch(bid)
  if b and not batchLive(b, now) then redis.call('HDEL', K.orders, BFIELD .. bid) end
end

-- dropKey removes an Idempotency-Key (iexp) whose batch's time has passed,
-- with the batch. A key that a later batch took since names that batch,
-- which stays.
local function dropKey(h, now)
  local bid, _, b = idemBatch(h)
  if bid and not (b and batchLive(b, now)) then
    if b then
      redis.call('HDEL', K.orders, BFIELD .. bid, IFIELD .. h)
    else
      redis.call('HDEL', K.orders, IFIELD .. h)
    end
  end
end

-- sweepQueue removes at most SWEEP entries from the head of queue q whose
-- time has passed, with drop(entry, now, ret) for each. It returns how
-- many it took and the time of the head it left: NEVER for an empty
-- queue, nil when it took SWEEP (more may have passed). A queue whose head
-- has not passed costs one entry read.
local function sweepQueue(q, now, ret, drop)
  local head = redis.call('LRANGE', q, 0, 0)[1]
  if not head then return 0, NEVER end
  local at = tonumber(string.match(head, '^(%d+)|'))
  if at >= now then return 0, at end
  local items = redis.call('LRANGE', q, 0, SWEEP - 1)
  local n, left = 0, NEVER
  for _, it in ipairs(items) do
    local j = string.find(it, '|', 1, true)
    local t = tonumber(string.sub(it, 1, j - 1))
    if t >= now then left = t; break end
    n = n + 1
    drop(string.sub(it, j + 1), now, ret)
  end
  redis.call('LTRIM', q, n, -1)
  if n == SWEEP then left = nil end
  return n, left
end

-- sweepPass removes at most SWEEP records from each queue whose time has
-- passed: orders done more than ret ago (oexp), batches without an
-- Idempotency-Key (bexp) and Idempotency-Keys with their batches (iexp).
-- Each queue holds entries of one window, so its entries expire in the
-- order they came; dispatch.lua. It returns whether a queue may hold more
-- to remove, and the earliest time of the queues' heads (nil: unknown).
local function sweepPass(now, ret)
  local a, ta = sweepQueue(K.oexp, now, ret, dropOrder)
  local b, tb = sweepQueue(K.bexp, now, ret, dropBatch)
  local c, tc = sweepQueue(K.iexp, now, ret, dropKey)
  local at
  if ta and tb and tc then at = math.min(ta, tb, tc) end
  return a == SWEEP or b == SWEEP or c == SWEEP, at
end

-- Meta's sw is the earliest time of the three queues' heads (absent:
-- unknown), so that a call reads the queues only once one of them has an
-- entry whose time has passed: sweepRounds keeps it, and a push onto an
-- empty queue (queuePush) drops it. sweepDue sweeps up to k times, while
-- there is something to remove, given sw as the caller read it (false:
-- absent), and returns sw as it is after.
local function sweepDue(now, ret, k, sw)
  local t = num(sw)
  if t and now <= t then return sw end
  local more, at
  for _ = 1, k do
    more, at = sweepPass(now, ret)
    if not more then break end
  end
  return at and fmt(at) or false
end

-- sweepRounds sweeps up to k times, while there is something to remove,
-- and keeps meta's sw (sweepDue).
local function sweepRounds(now, ret, k)
  local m = redis.call('HMGET', K.meta, 'sw', 'lv')
  local sw = sweepDue(now, ret, k, m[1])
  if sw == m[1] or not m[2] then return end -- (no pool: nothing to keep)
  if sw then redis.call('HSET', K.meta, 'sw', sw) else redis.call('HDEL', K.meta, 'sw') end
end

-- sweep sweeps once (sweepRounds).
local function sweep(now, ret) sweepRounds(now, ret, 1) end

-- sweepFor sweeps after a call that queued added orders to expire (the
-- ones it finished): SWEEP from each queue for every SWEEP of them and
-- SWEEP more, so that calls remove more than they add and a backlog
-- drains, at a cost in proportion to the call's own.
local function sweepFor(now, ret, added)
  sweepRounds(now, ret, math.floor(added / SWEEP) + 1)
end

-- queuePush appends the entries of list to queue q; if q was empty, the
-- first is its new head, which meta's sw may not cover: sw goes.
local function queuePush(q, list)
  for i = 1, #list, WRITE do
    local last = math.min(i + WRITE - 1, #list)
    if redis.call('RPUSH', q, unpack(list, i, last)) == last then
      redis.call('HDEL', K.meta, 'sw')
    end
  end
end
