-- scale_del.lua: remove a Scale; with force, cancel its outstanding orders.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (SCALE_DEL): compId, now ms, retention ms, the call's token,
--   force ('1'/'0').
-- Reply: the number of orders cancelled. Errors: DISPATCH NOPOOL, NOSCALE,
--   BUSY.
--
-- The Scale's own index lists its outstanding orders, so force costs
-- O(outstanding + the chunks that hold them), and for each token the
-- batch's assignments (own.lua).

function ENTRY.scaleDel(A)
  local P = SCALE_DEL
  local id, now, ret, tok = A[P.compId], tonumber(A[P.now]), tonumber(A[P.retention]), A[P.token]
  local force = A[P.force] == '1'
  if not poolExists() then return fail('NOPOOL') end

  local c = getScale(id)
  if not c then
    local prior = callGet(tok)
    if prior then return tonumber(prior) end
    return fail('NOSCALE', id)
  end
  if c.out > 0 and not force then return fail('BUSY', id .. ' ' .. fmt(c.out)) end

  local cancelled, okv, qv = 0, {}, {}
  local read = ownOutstanding(id, function(oid, o)
    o.st, o.done = 'x', fmt(now)
    okv[#okv + 1] = oid
    okv[#okv + 1] = encOrder(o)
    qv[#qv + 1] = fmt(now + ret) .. '|' .. oid
    cancelled = cancelled + 1
  end)
  ownClear(id, read)
  hsetMany(K.orders, okv)
  queuePush(K.oexp, qv)
  saveScale(id, c, nil)
  ringTrack(id, false)
  flushAgg()
  countUp('cancelled', cancelled)
  callPut(tok, fmt(cancelled))
  sweepFor(now, ret, cancelled)
  return cancelled
end
