-- dispatch.lua: dispatchBatch assigns a batch and records it, all or
-- nothing; functions.lua calls it for a batch, dispatch_many.lua for
-- several in turn.
--
-- KEYS: the pool's keys (lib.lua).
-- Arguments (argument k is A[o + k]): 1 batchId, 2 nowMs, 3 retentionMs,
--   4 the idempotency key's hash (12 bytes, '' none; idem.go), 5 the
--   fingerprint's hash (8 bytes), 6 idempotency TTL ms, 7 dry run ('1' or
--   '0'), 8 n, then
--   n pairs: order id, order key ('' none); then the cost cap (eligible
--   Scales × orders, for the strategies that read every Scale per order);
--   then the random numbers: one string of 2n integers below 2^53, each in
--   14 hex digits, two per order; then floor, the least time in ms that
--   the batch record stays (a re-sent call must still find it; resend.go).
-- The batch record leaves retentionMs after nowMs, or with an idempotency
--   key the idempotency TTL after, as the key does; at least floor after.
-- Reply: {kind, batchId, record}: kind 'new' (recorded now), 'batch' (this
--   batchId was recorded before: a retried call), 'replay' (the batch of the
--   Idempotency-Key) or 'dry' (computed, nothing changed; batchId '');
--   record is a batch record (doc.go). Errors: DISPATCH NOPOOL, INVALID,
--   IDEM (no detail: the caller knows its key), EMPTY, DUP, EXISTS, NOELIG, CAP (a Scale could pass MAXCOUNT),
--   STRATEGY, TOOEXPENSIVE, LAYOUT (a pool of an earlier layout, lib.lua).
--
-- Settling the pool's due Scales comes first (dispatch.Store.Dispatch);
-- then validation reads only, and the first write of the batch comes after
-- every check has passed.
-- A new batch ends with a sweep of expired records, unless noSweep is set:
-- the caller sweeps.

local function dispatchBatch(A, o, noSweep)
  local bid, now, ret = A[o + 1], tonumber(A[o + 2]), tonumber(A[o + 3])
  local ikey, fp, ittl, dry = A[o + 4], A[o + 5], tonumber(A[o + 6]), A[o + 7] == '1'
  local n = tonumber(A[o + 8])
  local function oid(i) return A[o + 7 + 2 * i] end
  local function okey(i) return A[o + 8 + 2 * i] end
  local maxCost = tonumber(A[o + 9 + 2 * n])
  local floor = tonumber(A[o + 11 + 2 * n]) or 0
  -- rnd returns the two random numbers of order i.
  local function rnd(i)
    local s, at = A[o + 10 + 2 * n], (i - 1) * 28
    return tonumber(string.sub(s, at + 1, at + 14), 16), tonumber(string.sub(s, at + 15, at + 28), 16)
  end
  -- hashKey is what consistent-hash hashes: the order's key, else its id.
  local function hashKey(i)
    local k = okey(i)
    if k == '' then return oid(i) end
    return k
  end

  local staleBid
  local meta = redis.call('HMGET', K.meta, 's', 'u', 'r', 'lv', 'ht', 'ls')
  if not meta[1] then return fail('NOPOOL') end
  if meta[4] ~= LAYOUT then return fail('LAYOUT') end
  -- No order goes to a Scale whose lease has run out, whether or not a
  -- tick has noticed: the due Scales are settled first (health.lua), which
  -- costs three index ranges when none is due.
  local hopts = {ht = tonumber(meta[5]) or 0, ls = tonumber(meta[6]) or 0}
  if settleDue(now, hopts, nil) > 0 then
    local m = redis.call('HMGET', K.meta, 'u', 'r')
    meta[2], meta[3] = m[1], m[2]
  end

  if not dry then
    if bid == '' then return fail('INVALID', 'a batch needs an id') end
    local b = redis.call('HGET', K.batches, bid)
    if b and batchLive(b, now) then return {'batch', bid, b} end
    if ikey ~= '' then
      -- The key is held while its batch is (idemBatch); a batch past its
      -- time that it still names leaves as this batch takes the key.
      local rbid, rfp, rb = idemBatch(ikey)
      if rb and batchLive(rb, now) then
        if rfp ~= fp then return fail('IDEM') end
        return {'replay', rbid, rb}
      end
      if rb then staleBid = rbid end
    end
  end

  if n == 0 then return fail('EMPTY') end
  local seen, stale, idList = {}, {}, {}
  for i = 1, n do
    local id = oid(i)
    if seen[id] then return fail('DUP', id) end
    seen[id] = true
    idList[i] = id
  end
  local held = hmgetList(K.orders, idList)
  for i = 1, n do
    local o = held[i] and decOrder(held[i])
    if o then
      if live(o, now, ret) then return fail('EXISTS', idList[i]) end
      stale[#stale + 1] = o -- expired, not yet swept: this batch replaces it
    end
  end
  -- No eligible Scale: none without maxOrders (u) and no room left in the
  -- others (r), as each of them has some.
  local unlimited, room = tonumber(meta[2]) or 0, tonumber(meta[3]) or 0
  if unlimited == 0 and room == 0 then return fail('NOELIG', 'none') end
  if unlimited == 0 and room < n then return fail('NOELIG', fmt(room)) end
  local strategy = meta[1]

  local plan, failed = planAssign(strategy, n, dry, room, now, maxCost, rnd, hashKey)
  if not plan then return failed end
  local comps, cur, first = plan.comps, plan.cur, plan.first

  local parts = {}
  for i = 1, n do parts[2 * i - 1], parts[2 * i] = idList[i], comps[i] end
  local pairs_ = table.concat(parts, ',')
  if dry then
    return {'dry', '', fmt(now) .. '|0|' .. strategy .. '|' .. pairs_}
  end

  local chunkOf, ownKV = ownAppend(comps, first, n, idList)
  hsetMany(K.own, ownKV)

  local at = fmt(now)
  for _, o in ipairs(stale) do refDrop(o.ref) end
  local ref = hex(redis.call('HINCRBY', K.meta, 'bn', 1))
  redis.call('HSET', K.bref, ref, bid .. '|' .. at .. '|' .. fmt(n))
  local okv, pre = {}, 'a' .. ref .. '||'
  for i = 1, n do
    okv[2 * i - 1] = idList[i]
    okv[2 * i] = pre .. comps[i] .. '|' .. chunkOf[i] .. '|' .. okey(i)
  end
  hsetMany(K.orders, okv)
  saveAssigned(first, cur, plan.eligDone)
  flushAgg()
  countUp('dispatched', n)

  local window = ret
  if ikey ~= '' then window = ittl end
  local exp = now + math.max(window, floor)
  local rec = at .. '|' .. fmt(exp) .. '|' .. strategy .. '|' .. pairs_
  redis.call('HSET', K.batches, bid, rec)
  -- Each queue holds one window (lib.lua's sweep).
  if ikey ~= '' then
    if staleBid then redis.call('HDEL', K.batches, staleBid) end
    redis.call('HSET', K.idem, ikey, bid .. fp)
    redis.call('RPUSH', K.iexp, fmt(exp) .. '|' .. ikey)
  else
    redis.call('RPUSH', K.bexp, fmt(exp) .. '|' .. bid)
  end
  if not noSweep then sweep(now, ret) end
  return {'new', bid, rec}
end
