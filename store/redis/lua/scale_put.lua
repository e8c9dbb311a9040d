-- scale_put.lua: register a Scale or update the fields given.
--
-- KEYS: the pool's keys (lib.lua).
-- A: 1 compId, 2 nowMs, 3 retentionMs, 4 call token, 5 weight, 6 state
--   (a, d or x), 7 maxOrders, 8 orderCount; '' keeps the field (or takes
--   the default: weight 1, active, no maxOrders, orderCount 0); 9 the most
--   Scales a pool may hold.
-- Reply: {created (1 or 0), the Scale as scaleView shows it}. Errors: DISPATCH NOPOOL, FULL.

local function scalePut(A)
  local id, now, ret, tok = A[1], tonumber(A[2]), tonumber(A[3]), A[4]
  if not poolExists() then return fail('NOPOOL') end

  local old = getScale(id)
  if not old and redis.call('HLEN', K.scales) >= tonumber(A[9]) then return fail('FULL', A[9]) end
  local c
  if old then
    c = copyScale(old)
  else
    -- up, its lease starting now (dispatch.Register)
    c = {w = 1, st = 'a', max = 0, out = 0, base = 0, since = '', avg = '', h = 'u', hb = fmt(now),
      eu = '', ej = 0, f = 0, fs = '', lf = ''}
  end
  if A[5] ~= '' then c.w = tonumber(A[5]) end
  if A[7] ~= '' then c.max = tonumber(A[7]) end
  if A[6] ~= '' then c.st = A[6] end
  if A[8] ~= '' then c.base = math.max(0, tonumber(A[8]) - c.out) end
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
