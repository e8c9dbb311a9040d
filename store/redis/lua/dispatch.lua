-- dispatch.lua: dispatchBatch assigns a batch and records it, all or
-- nothing; functions.lua calls it for a batch, dispatch_many.lua for
-- several in turn.
--
-- KEYS: the pool's keys (lib.lua).
-- Arguments (DISPATCH, functions.go's fnDispatch, batches.go's
--   dispatchArgs; argument a is A[o + DISPATCH.a], o the batch's offset, 0 for a
--   call of one batch): batchId (for a batch named after its order,
--   batchid.go, ':' and its tag), now ms, settings (the same string call
--   after call, settingsOf: "retention|idemTTL|maxCost|floor|dry|keyed",
--   the times in ms, maxCost eligible Scales × orders for the strategies
--   that read every Scale per order, floor the least time in ms that the
--   batch record stays: a re-sent call must still find it, resend.go; dry
--   '1' a dry run, keyed '1' when the keys follow the ids; then '|' and
--   an order id that repeats when one does, which fails the batch with
--   DUP), idem (the idempotency key's hash, IDEMKEYLEN bytes, and its
--   fingerprint's, 8 bytes, joined; '' none; idem.go; for a batch named
--   after its first order, which has no key, '|' and its order ids joined
--   by ',' when it has several, which its assignments keep: layout 9),
--   rand (2n random
--   integers below 2^53, each in RANDDIGITS hex digits, two per order:
--   randPair; '' none, which a strategy that draws, RANDOM, refuses with
--   NORAND), then orders: the n order ids, and when keyed the n order
--   keys ('' none) after them. n follows from the batch's argument count.
-- The batch record leaves retentionMs after nowMs, or with an idempotency
--   key the idempotency TTL after, as the key does; at least floor after.
--   A named batch lives in its order's record (records.lua's decOrder),
--   which outlives that: Go names a batch only where floor <= retention.
-- Reply: the batch record (doc.go) of the request's batch, recorded now,
--   or before (a retried call), or computed by a dry run (nothing changed);
--   or {'replay', batchId, record}, the batch of the Idempotency-Key. (A
--   string, not a table: Redis answers a table reply for some thousand
--   instructions more, as it looks for fields err, ok, double and others
--   in it first.) But a batch of several orders that has no record string
--   of its own (a dry run, or named after its first order) answers it in
--   two, {"createdAt|expiresAt|strategy", "orderId,compId,…"}: the pairs
--   are a string made anyway, and joining 2.5 KB of them to the head for
--   the reply alone cost more than the table. dispatchBatch also returns
--   true for a batch recorded now. Errors: DISPATCH NOPOOL, INVALID,
--   IDEM (no detail: the caller knows its key), EMPTY, DUP, EXISTS, NOELIG, CAP (a Scale could pass MAXCOUNT),
--   STRATEGY, TOOEXPENSIVE, NORAND (no random numbers, which the
--   strategy draws), LAYOUT (a pool of an earlier layout, lib.lua).
--
-- Settling the pool's due Scales comes first (dispatch.Store.Dispatch);
-- then validation reads only, and the first write of the batch comes after
-- every check has passed.
--
-- A call reads meta once (callMeta) and writes it once at its end
-- (metaFlush): the counter n.d (raised, not read), and when they changed
-- the batch refs' counter bn, the free-room aggregates u and r, and the
-- times sw and hd that let a call skip the sweep and the settling while
-- nothing is due. dispatch_many.lua shares them among its batches.

-- callMeta reads what a dispatch call needs of meta, or returns nil and an
-- error reply (NOPOOL, LAYOUT).
local function callMeta()
  local m = redis.call('HMGET', K.meta, 's', 'u', 'r', 'lv', 'bn', 'sw', 'hd')
  if not m[1] then return nil, fail('NOPOOL') end
  if m[4] ~= LAYOUT then return nil, fail('LAYOUT') end
  local u, r = num(m[2]) or 0, num(m[3]) or 0
  -- (every field a call sets is made here, false until set: a field added
  -- later can make Lua grow the table's hash part, a rehash of it per call)
  return {s = m[1], u = u, r = r, u0 = u, r0 = r, bn = m[5], bn0 = m[5],
    sw = m[6], sw0 = m[6], hd = m[7], hd0 = m[7], n = 0,
    now = false, ret = false, dry = false, wrote = false, many = false, own = false, wf = false}
end

-- metaFlush writes what the call changed in meta: n.d by HINCRBY, and one
-- HSET more when bn, u or r changed, one when sw or hd did.
local function metaFlush(cx)
  if cx.n > 0 then
    redis.call('HINCRBY', K.meta, 'n.d', cx.n == 1 and '1' or fmt(cx.n))
    -- (bn changes only with a batch of several orders, records.lua's refs;
    -- u and r only with Scales that have a maxOrders, or a settling)
    local bn, room = cx.bn ~= cx.bn0, cx.u ~= cx.u0 or cx.r ~= cx.r0
    if bn and room then
      redis.call('HSET', K.meta, 'bn', fmt(cx.bn), 'u', fmt(cx.u), 'r', fmt(cx.r))
    elseif bn then
      redis.call('HSET', K.meta, 'bn', fmt(cx.bn))
    elseif room then
      redis.call('HSET', K.meta, 'u', fmt(cx.u), 'r', fmt(cx.r))
    end
  end
  -- (sw and hd change seldom)
  if cx.sw ~= cx.sw0 then
    if cx.sw then redis.call('HSET', K.meta, 'sw', cx.sw) else redis.call('HDEL', K.meta, 'sw') end
  end
  if cx.hd ~= cx.hd0 then
    if cx.hd then redis.call('HSET', K.meta, 'hd', cx.hd) else redis.call('HDEL', K.meta, 'hd') end
  end
end

-- settleFor settles the pool's due Scales at now (health.lua's
-- settleCached): no order goes to a Scale whose lease has run out,
-- whether or not a tick has noticed. (A settling that has a due Scale
-- to read writes the call's elig, cx.wf, first: health.lua's settleDue.)
local function settleFor(cx, now)
  local done
  done, cx.hd = settleCached(now, cx.hd, cx.wf)
  if done > 0 then
    -- settled changes are in meta (flushAgg); the call's own are not yet
    local m = redis.call('HMGET', K.meta, 'u', 'r')
    local u, r = tonumber(m[1]) or 0, tonumber(m[2]) or 0
    cx.u, cx.r, cx.u0, cx.r0 = u + cx.u - cx.u0, r + cx.r - cx.r0, u, r
  end
end

-- settingsOf reads a settings argument (see above) into {ret, ttl, cost,
-- floor, dry, keyed, dup}: a pool's calls send the same few strings, so it
-- keeps the tables of the last ones it read (which nobody changes).
local settingsOf = (function()
  local of, n = {}, 0
  return function(s)
    local v = of[s]
    if v then return v end
    local f = split(s, '|', 7)
    v = {ret = tonumber(f[1]), ttl = tonumber(f[2]), cost = tonumber(f[3]), floor = tonumber(f[4]),
      dry = f[5] == '1', keyed = f[6] == '1', dup = f[7]}
    if n >= 16 then of, n = {}, 0 end
    of[s], n = v, n + 1
    return v
  end
end)()

-- heldOrders reads the records of orders A[ib + 1 … ib + n] into held[3 …
-- n + 2] in RESP3 (hmgetList), where a field the hash lacks is nil (false
-- in RESP2): the reply of a batch whose orders the pool does not hold, the
-- usual case, has no value at all, and next() says so in C, where a loop
-- over it in Lua cost some 450 instructions an order (cpu22). It returns
-- whether the pool holds any.
local function heldOrders(held, A, ib, n)
  redis.setresp(3)
  local v = hmgetList(K.orders, A, ib + 1, ib + n)
  redis.setresp(2)
  if next(v) == nil then return false end
  for i = 1, n do held[i + 2] = v[i] end
  return true
end

-- dispatchBatch assigns the batch of the c arguments A[o + DISPATCH.batchId …] in
-- call cx (callMeta) and records it; it returns its reply and true, or a
-- reply of a batch it did not record now (an error having written nothing
-- of the batch).
local function dispatchBatch(A, o, c, cx)
  local bid, at, set = A[o + DISPATCH.batchId], A[o + DISPATCH.now], settingsOf(A[o + DISPATCH.settings])
  local now, ret, dry = tonumber(at), set.ret, set.dry
  cx.now, cx.ret, cx.dry, cx.wrote = now, ret, dry, false
  -- A batch named after its order (batchid.go) comes as ':' and its tag,
  -- and lives in its order's record (records.lua); it has no key, and
  -- the key's argument holds '|' and its ids joined (idl), which its
  -- assignments keep.
  local tag = string.byte(bid, 1) == 58 and string.sub(bid, 2)
  local ikey, fp, idl = A[o + DISPATCH.idem], '', ''
  if tag then
    idl, ikey = ikey, ''
  elseif ikey ~= '' then
    ikey, fp = string.sub(ikey, 1, IDEMKEYLEN), string.sub(ikey, IDEMKEYLEN + 1)
  end
  -- order i's id is A[ib + i], its key A[kb + i] (kb nil: no order has one)
  local ib, n, kb = o + DISPATCH.orders - 1, c - DISPATCH.orders + 1, nil
  if set.keyed then n = n / 2; kb = ib + n end
  local id1 = n > 0 and A[ib + 1] or nil
  local staleBid
  settleFor(cx, now)

  if not dry and bid == '' then return fail('INVALID', 'a batch needs an id') end
  -- One read for the batch id, the Idempotency-Key and the orders (they
  -- share K.orders, records.lua): held = {batch, key, order 1, …}, the
  -- key's field '' when there is none. A batch of several reads its
  -- orders apart (heldOrders): held[2 + i] is nil for order i unless the
  -- pool holds it, and found says whether it holds any.
  -- A single order among Scales without maxOrders, with a strategy that
  -- picks it apart (pickers.lua's pickOne), is picked first, so that the
  -- same read takes its Scale's own tail (held[4]); an error of the pick
  -- waits for its turn below.
  local stale, held, found
  local bf, kf = '', ikey ~= '' and IFIELD .. ikey or ''
  if not tag then bf = BFIELD .. bid end
  local st = STRATEGIES[cx.s]
  -- (a single order in a call of several batches: the tails that the
  -- call's earlier batches left pending are written first, own.lua's
  -- ownPend, as its own tail is written with its records)
  if cx.own and n == 1 then
    ownPend.flush(cx.own)
    cx.own = false
  end
  -- (and the call's elig, waterfill.lua's wfPend, which its pick reads)
  if cx.wf and n == 1 then wfPend.flush(cx.wf) end
  local one, oneV
  if n == 1 and not dry and cx.r == 0 and cx.u > 0 and st and st.pickOne then
    one, oneV = st.pickOne()
  end
  if tag and n == 1 then
    if one then
      local r = redis.call('HMGET', K.orders, id1, tailField(one))
      held = {false, false, r[1], r[2]}
    else
      held = {false, false, redis.call('HGET', K.orders, id1)}
    end
  elseif n == 1 and one then
    held = redis.call('HMGET', K.orders, bf, kf, id1, tailField(one))
  elseif n == 1 then
    held = redis.call('HMGET', K.orders, bf, kf, id1)
  else
    held = {false, false}
    if bf ~= '' or kf ~= '' then held = redis.call('HMGET', K.orders, bf, kf) end
    found = heldOrders(held, A, ib, n)
  end
  local h1 = held[3] and decOrder(held[3], id1)
  if tag then
    local b = namedBatch(id1, h1, tag, now, ret)
    if b then return b end
  elseif not dry then
    local b = held[1]
    if b and batchLive(b, now) then return b end
    if held[2] then
      -- The key is held while its batch is (idemBatch); a batch past its
      -- time that it still names leaves as this batch takes the key.
      local rbid, rfp = idemOf(held[2])
      local rb = getBatch(rbid)
      if rb and batchLive(rb, now) then
        if rfp ~= fp then return fail('IDEM') end
        return {'replay', rbid, rb}
      end
      if rb then staleBid = rbid end
    end
  end

  if n == 0 then return fail('EMPTY') end
  -- (Go finds a repeated id, batches.go's settingsArg)
  if set.dup then return fail('DUP', set.dup) end
  -- (a batch of several that holds none of its orders: nothing to check)
  for i = 1, (n == 1 or found) and n or 0 do
    local h = h1
    if i > 1 then h = held[i + 2] and decOrder(held[i + 2], A[ib + i]) end
    if h then
      if live(h, now, ret) then return fail('EXISTS', h.id) end
      -- expired, not yet swept: this batch replaces it
      stale = stale or {}
      stale[#stale + 1] = h
    end
  end
  -- No eligible Scale: none without maxOrders (u) and no room left in the
  -- others (r), as each of them has some.
  local unlimited, room = cx.u, cx.r
  if unlimited == 0 and room == 0 then return fail('NOELIG', 'none') end
  if unlimited == 0 and room < n then return fail('NOELIG', fmt(room)) end
  local strategy = cx.s

  local rnd, hashKey, maxCost
  if not (st and st.plan) then -- (a plan of the whole batch takes neither)
    -- (Go sends no numbers while it believes the strategy draws none:
    -- NORAND, before any write of the batch, and it sends them again)
    if RANDOM[strategy] and A[o + DISPATCH.rand] == '' then return fail('NORAND', strategy) end
    rnd, hashKey = orderPicks(A[o + DISPATCH.rand], A, kb and A, ib, kb)
    maxCost = set.cost
  end
  -- c1 is the Scale of a single order. From here on the batch writes
  -- (cx.wrote, which dispatch_many.lua reads when a batch raises: one that
  -- raised before it is applied nowhere)
  cx.wrote = not dry
  local plan, failed, c1, comps, cur, first
  if one then
    st.takeOne(one, dry)
    c1 = one
  elseif oneV then
    return oneV -- (the pick's error)
  else
    -- (in a call of several batches elig waits too: waterfill.lua's wfPend)
    if cx.many and n > 1 and not cx.wf then cx.wf = {} end
    plan, failed = planAssign(strategy, n, dry, room, now, maxCost, rnd, hashKey, cx.wf)
    if not plan then return failed end
    comps, cur, first = plan.comps, plan.cur, plan.first
    c1 = comps[1]
  end

  -- (a single order's assignment goes into its records' strings as they
  -- are made: a string less)
  -- A batch of several answers its Scales, "compId,…" in its orders'
  -- order (scs), which Go pairs with the ids it sent. A batch named after
  -- its first order keeps them with its ids after them as Go joined them
  -- (idl, "|orderId,…"): "compId,…,compId,|orderId,…" (layout 9), one
  -- string that Lua makes, which is also its answer. Only a batch record
  -- (a UUID or an Idempotency-Key) holds the pairs, "orderId,compId,…"
  -- (pairs_), eight orders a concatenation: Lua's .. copies its operands
  -- in one pass, where table.concat takes each field through its buffer
  -- (red25). (Redis's Lua hashes every byte of every string it makes,
  -- about ten instructions a byte: rec26.)
  local scs, pairs_
  if n > 1 and tag then
    -- (a caller that did not join the ids: joined here)
    if idl == '' then idl = '|' .. table.concat(A, ',', ib + 1, ib + n) end
    -- (idl joins the n Scales for the concatenation alone: comps outlives
    -- the call, waterfill.lua's wfPend.plan, and would keep it; rev26 T1)
    comps[n + 1] = idl
    scs = table.concat(comps, ',', 1, n + 1)
    comps[n + 1] = nil
  elseif n > 1 then
    scs = table.concat(comps, ',', 1, n)
  end
  if n > 1 and not (tag or dry) then
    local parts, np, i = {}, 0, 1
    while i + 7 <= n do
      local j = ib + i
      np = np + 1
      parts[np] = A[j] .. ',' .. comps[i] .. ',' .. A[j + 1] .. ',' .. comps[i + 1] .. ',' ..
        A[j + 2] .. ',' .. comps[i + 2] .. ',' .. A[j + 3] .. ',' .. comps[i + 3] .. ',' ..
        A[j + 4] .. ',' .. comps[i + 4] .. ',' .. A[j + 5] .. ',' .. comps[i + 5] .. ',' ..
        A[j + 6] .. ',' .. comps[i + 6] .. ',' .. A[j + 7] .. ',' .. comps[i + 7]
      i = i + 8
    end
    for m = i, n do
      np = np + 1
      parts[np] = A[ib + m] .. ',' .. comps[m]
    end
    pairs_ = table.concat(parts, ',')
  end
  if dry then
    if n == 1 then return at .. '|0|' .. strategy .. '|' .. id1 .. ',' .. c1 end
    return {at .. '|0|' .. strategy, scs}
  end

  local window = ret
  if ikey ~= '' then window = set.ttl end
  local exp = now + math.max(window, set.floor)
  local expS = fmt(exp)
  -- (a batch of several named after its first order has no record: its
  -- reply is its head and its assignments, scs)
  local rec, reply
  if n == 1 then
    rec = at .. '|' .. expS .. '|' .. strategy .. '|' .. id1 .. ',' .. c1
  elseif tag then
    reply = {at .. '|' .. expS .. '|' .. strategy, scs}
  else
    rec = at .. '|' .. expS .. '|' .. strategy .. '|' .. pairs_
  end
  if stale then
    for _, h in ipairs(stale) do refDrop(h.ref) end
  end
  if staleBid then redis.call('HDEL', K.orders, BFIELD .. staleBid) end

  -- The batch's records, in one HSET: its orders, the batch, the
  -- Idempotency-Key, the own index's tails (own.lua); a batch of several
  -- orders also its ref, which a single order's record holds itself
  -- (records.lua's decOrder). A batch named after its first order has no
  -- record of its own: its order's record or its ref holds it.
  local q, entry = K.bexp, nil -- (the queue and its entry, made below)
  if n == 1 then
    local id, key1 = id1, kb and A[kb + 1] or ''
    local chunk, tf, tv, sf, sv = ownAppendOne(c1, id, one and held[4])
    local orec
    if tag then
      orec = 'a||' .. c1 .. '|' .. chunk .. '|:' .. tag .. STRATCODE[strategy] .. '|' .. hex(now) .. '||' .. key1
      q = nil -- (no record of its own to expire)
    else
      orec = 'a||' .. c1 .. '|' .. chunk .. '|' .. bid .. '|' .. at .. '|' .. key1
    end
    if tag then
      if sf then
        redis.call('HSET', K.orders, id, orec, tf, tv, sf, sv)
      else
        redis.call('HSET', K.orders, id, orec, tf, tv)
      end
    elseif ikey == '' then
      if sf then
        redis.call('HSET', K.orders, id, orec, bf, rec, tf, tv, sf, sv)
      else
        redis.call('HSET', K.orders, id, orec, bf, rec, tf, tv)
      end
    else
      q, entry = K.iexp, expS .. '|' .. ikey
      if sf then
        redis.call('HSET', K.orders, id, orec, bf, rec, tf, tv, kf, bid .. fp, sf, sv)
      else
        redis.call('HSET', K.orders, id, orec, bf, rec, tf, tv, kf, bid .. fp)
      end
    end
  else
    local bn = (tonumber(cx.bn) or 0) + 1
    cx.bn = bn
    local ref = hex(bn)
    -- The own index: a batch named after its first order is one token per
    -- Scale (own.lua's ownAppendTok), its orders' records that token's
    -- chunk; a batch named by a UUID, one id per order, its records the
    -- chunk written '.' and the chunk (own.lua's ownAt). A token's orders
    -- share their records' head (mid, by Scale, which the own index makes
    -- from pre as it finds each token's chunk).
    local pre = 'a' .. ref .. '||'
    local chunkOf, okv, mid
    -- (in a call of several batches the tails wait: own.lua's ownPend)
    if cx.many and not cx.own then cx.own = ownPend.new() end
    -- (a call of several batches keeps their records' list, cx.own.kv, and
    -- writes from 1 again: a list of 200 grown anew costs Lua nine
    -- resizes a batch; what lies past k, an earlier batch's, goes with the
    -- call)
    local k = 0
    if tag and cx.own then
      mid, okv = ownPend.tok(cx.own, first, cur, ref, pre), cx.own.kv
    elseif cx.own then
      chunkOf, okv = ownPend.ids(cx.own, comps, first, n, A, ib), cx.own.kv
    elseif tag then
      mid, okv = ownAppendTok(first, cur, ref, pre)
    else
      chunkOf, okv = ownAppend(comps, first, n, A, ib)
    end
    if not cx.own then k = #okv end
    if tag then
      -- (named after its first order: the ref holds the batch, and no
      -- record of its own expires)
      okv[k + 1] = RFIELD .. ref
      okv[k + 2] = ':' .. tag .. STRATCODE[strategy] .. '|' .. hex(now) .. '|' .. fmt(n) .. '|' .. id1
      okv[k + 3], okv[k + 4] = PFIELD .. ref, scs
      q = nil
    else
      okv[k + 1], okv[k + 2], okv[k + 3], okv[k + 4] = RFIELD .. ref, bid .. '|' .. at .. '|' .. fmt(n), bf, rec
    end
    k = k + 4
    if ikey ~= '' then
      okv[k + 1], okv[k + 2] = kf, bid .. fp
      q, entry = K.iexp, expS .. '|' .. ikey
      k = k + 2
    end
    -- (k counts up: three VM instructions an order fewer than k + 2 * i
    -- and k + 2 * i - 1, about 1 % of a batch of 100: rec26)
    if mid and kb then
      for i = 1, n do
        k = k + 2
        okv[k - 1], okv[k] = A[ib + i], mid[comps[i]] .. A[kb + i]
      end
    elseif mid then
      for i = 1, n do
        k = k + 2
        okv[k - 1], okv[k] = A[ib + i], mid[comps[i]]
      end
    else
      for i = 1, n do
        k = k + 2
        okv[k - 1], okv[k] = A[ib + i], pre .. comps[i] .. '|.' .. chunkOf[i] .. '|' .. (kb and A[kb + i] or '')
      end
    end
    hsetMany(K.orders, okv, k)
  end
  -- (a plan that wrote elig itself among Scales without maxOrders, room
  -- 0, leaves saveAssigned nothing to do: it would look at each Scale to
  -- find none with a maxOrders)
  if plan and not (plan.eligDone and room == 0) then saveAssigned(first, cur, plan.eligDone) end
  cx.u, cx.r, agg.u, agg.r = cx.u + agg.u, cx.r + agg.r, 0, 0
  cx.n = cx.n + n

  -- Each queue holds one window (records.lua's sweep); a queue that was empty
  -- has a new head, which meta's sw must cover.
  if q and redis.call('RPUSH', q, entry or expS .. '|' .. bid) == 1 then
    local t = tonumber(cx.sw)
    if t and exp < t then cx.sw = expS end
  end
  return reply or rec, true
end

-- dispatchOne is the call of one batch: dispatchBatch, then a sweep of
-- expired records, then meta.
function ENTRY.dispatchOne(A)
  local cx, failed = callMeta()
  if not cx then return failed end
  local r, new = dispatchBatch(A, 0, #A, cx)
  if new then cx.sw = sweepDue(cx.now, cx.ret, 1, cx.sw) end
  -- (a dry run changes nothing: a settling drops hd, healthIndex)
  if not cx.dry then metaFlush(cx) end
  return r
end
