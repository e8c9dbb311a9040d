-- scale_put.lua: register a Scale or update the fields given.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (SCALE_PUT): compId, now ms, retention ms, the call's token,
--   weight, state (a, d or x), maxOrders, orderCount ('' keeps the field,
--   or takes the default: weight 1, active, no maxOrders, orderCount 0);
--   maxScales, the most Scales a pool may hold.
-- Reply: {created (1 or 0), the Scale as scaleView shows it}. Errors: DISPATCH NOPOOL, FULL.

function ENTRY.scalePut(A)
  local P = SCALE_PUT
  local id, now, ret, tok = A[P.compId], tonumber(A[P.now]), tonumber(A[P.retention]), A[P.token]
  if not poolExists() then return fail('NOPOOL') end

  local old = getScale(id)
  if not old and redis.call('HLEN', K.scales) >= tonumber(A[P.maxScales]) then
    return fail('FULL', A[P.maxScales])
  end
  local c
  if old then
    c = copyScale(old)
  else
    -- up, its lease starting now (dispatch.Register)
    c = {w = 1, st = 'a', max = 0, out = 0, base = 0, since = '', avg = '', h = 'u', hb = fmt(now),
      eu = '', ej = 0, f = 0, fs = '', lf = ''}
  end
  if A[P.weight] ~= '' then c.w = tonumber(A[P.weight]) end
  if A[P.maxOrders] ~= '' then c.max = tonumber(A[P.maxOrders]) end
  if A[P.state] ~= '' then c.st = A[P.state] end
  if A[P.orderCount] ~= '' then c.base = math.max(0, tonumber(A[P.orderCount]) - c.out) end
  -- Active since now when registered active or when it becomes active.
  if c.st == 'a' and (not old or old.st ~= 'a') then c.since = fmt(now) end

  saveScale(id, old, c)
  if not old then ringTrack(id, true) end
  flushAgg()
  local created = old and 0 or 1
  local prior = callGet(tok)
  if prior then created = tonumber(prior) else callPut(tok, fmt(created)) end
  sweep(now, ret)
  return {created, scaleView(c)}
end
