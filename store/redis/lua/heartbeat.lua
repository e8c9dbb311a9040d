-- heartbeat.lua: renew a Scale's lease (dispatch.Store.Heartbeat).
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (HEARTBEAT, in functions.go's order): compId, now ms,
--   retention ms, orderCount ('' keeps the load).
-- Reply: {the Scale as scaleView shows it, ht, ls, fw}: the pool's
--   heartbeatTimeout, leasesSince and failWindow ms, for the view at now.
--   Errors: DISPATCH NOPOOL, NOSCALE.
--
-- It settles the Scale with its old lease (a lapse no call noticed yet is
-- journalled), renews the lease at now, applies orderCount as scale_put.lua
-- does, and settles it again: a lapsed Scale is up again, or ejected while
-- its ejection lasts. It never changes the state. Run twice for one call,
-- it renews the same lease to the same time.

function ENTRY.heartbeat(A)
  local id, now, ret = A[HEARTBEAT.compId], tonumber(A[HEARTBEAT.now]), tonumber(A[HEARTBEAT.retention])
  if not poolExists() then return fail('NOPOOL') end
  local old = getScale(id)
  if not old then return fail('NOSCALE', id) end
  local o = healthOpts()
  local c = copyScale(old)
  settle(id, c, now, o)
  c.hb = fmt(now)
  local count = A[HEARTBEAT.orderCount]
  if count ~= '' then c.base = math.max(0, tonumber(count) - c.out) end
  settle(id, c, now, o)
  saveScale(id, old, c)
  flushAgg()
  sweep(now, ret)
  return {scaleView(c), fmt(o.ht), fmt(o.ls), fmt(o.fw)}
end
