-- heartbeat.lua: renew a Scale's lease (dispatch.Store.Heartbeat).
--
-- KEYS: the pool's keys (lib.lua).
-- A: 1 compId, 2 nowMs, 3 retentionMs, 4 orderCount ('' keeps the load).
-- Reply: {the Scale as scaleView shows it, ht, ls, fw}: the pool's
--   heartbeatTimeout, leasesSince and failWindow ms, for the view at now.
--   Errors: DISPATCH NOPOOL, NOSCALE.
--
-- It settles the Scale with its old lease (a lapse no call noticed yet is
-- journalled), renews the lease at now, applies orderCount as scale_put.lua
-- does, and settles it again: a lapsed Scale is up again, or ejected while
-- its ejection lasts. It never changes the state. Run twice for one call,
-- it renews the same lease to the same time.

local function heartbeat(A)
  local id, now, ret = A[1], tonumber(A[2]), tonumber(A[3])
  if not poolExists() then return fail('NOPOOL') end
  local old = getScale(id)
  if not old then return fail('NOSCALE', id) end
  local o = healthOpts()
  local c = copyScale(old)
  settle(id, c, now, o)
  c.hb = fmt(now)
  if A[4] ~= '' then c.base = math.max(0, tonumber(A[4]) - c.out) end
  settle(id, c, now, o)
  saveScale(id, old, c)
  flushAgg()
  sweep(now, ret)
  return {scaleView(c), fmt(o.ht), fmt(o.ls), fmt(o.fw)}
end
