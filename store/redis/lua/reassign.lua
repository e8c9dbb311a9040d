-- reassign.lua: move the outstanding orders of a down Scale to the pool's
-- eligible Scales with the pool's strategy, all or nothing, as a batch of
-- those orders (oldest first) would be assigned.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (REASSIGN): compId, now ms, retention ms, maxCost (the cost
--   cap, as dispatch.lua), the call's token, rand: the random numbers, two
--   per order in order of assignment (lib.lua's randPair).
-- Reply: {orderId, new compId, ...} oldest first; empty when the Scale has
--   no outstanding orders. A retried call moves nothing twice and answers
--   with the first run's moves (callGet). Errors: DISPATCH NOPOOL, NOSCALE,
--   SCALESTATE, NOELIG, STRATEGY, TOOEXPENSIVE.
--
-- It settles the pool's due Scales first (health.lua). Each order keeps its
-- record (batch ref, key) but for its compId and chunk, and counts one move
-- more; it goes to the tail of its new Scale's own index. Validation reads
-- only; the first write comes after every check has passed.

function ENTRY.reassign(A)
  local P = REASSIGN
  local from, now, ret = A[P.compId], tonumber(A[P.now]), tonumber(A[P.retention])
  local maxCost, tok = tonumber(A[P.maxCost]), A[P.token]
  local meta = redis.call('HMGET', K.meta, 's', 'u', 'r')
  if not meta[1] then return fail('NOPOOL') end
  local prior = callGet(tok)
  if prior then
    return split(prior, ',')
  end
  if settleDue(now, healthOpts(), nil) > 0 then meta = redis.call('HMGET', K.meta, 's', 'u', 'r') end
  local src = getScale(from)
  if not src then return fail('NOSCALE', from) end
  if src.st ~= 'x' then
    return fail('SCALESTATE', from .. ' ' .. (STATENAMES[src.st] or src.st))
  end

  -- The Scale's outstanding orders, oldest first, from its own index.
  local ids, recs = {}, {}
  local read = ownOutstanding(from, function(oid, o)
    ids[#ids + 1] = oid
    recs[#recs + 1] = o
  end)
  local n = #ids
  if n == 0 then -- (a re-send finds nothing to move either: no reply to keep)
    sweep(now, ret)
    return {}
  end
  if redis.call('ZCARD', K.elig) == 0 then return fail('NOELIG', 'none') end
  local unlimited, room = tonumber(meta[2]) or 0, tonumber(meta[3]) or 0
  if unlimited == 0 and room < n then return fail('NOELIG', fmt(room)) end
  local strategy = meta[1]

  local keys = {}
  for i = 1, n do keys[i] = recs[i].key end
  local rnd, hashKey = orderPicks(A[P.rand], ids, keys)

  local plan, failed = planAssign(strategy, n, false, room, now, maxCost, rnd, hashKey)
  if not plan then return failed end
  local comps, cur, first = plan.comps, plan.cur, plan.first

  local chunkOf, ownKV = ownAppend(comps, first, n, ids, 0)
  ownClear(from, read)
  hsetMany(K.orders, ownKV)

  local okv, reply = {}, {}
  for i = 1, n do
    local o = recs[i]
    o.comp, o.chunk, o.mv = comps[i], chunkOf[i], o.mv + 1
    okv[#okv + 1] = ids[i]
    okv[#okv + 1] = encOrder(o)
    reply[#reply + 1] = ids[i]
    reply[#reply + 1] = comps[i]
  end
  hsetMany(K.orders, okv)
  saveAssigned(first, cur, plan.eligDone)
  local nsrc = copyScale(src)
  nsrc.out = nsrc.out - n
  saveScale(from, src, nsrc)
  flushAgg()
  countUp('moved', n)
  callPut(tok, table.concat(reply, ','))
  sweep(now, ret)
  return reply
end
