-- dispatch_many.lua: dispatchMany applies several batches of one pool,
-- coalesced by a replica, one after another as if each came in its own
-- call: each is all or nothing, and a batch sees the batches before it (an
-- order id or Idempotency-Key an earlier batch recorded).
--
-- Arguments (DISPATCH_MANY, functions.go): m, then batches: m batches,
--   each its argument count c and then the c arguments of dispatch.lua.
-- Reply: m replies in batch order, each dispatch.lua's reply or
--   {'error', 'DISPATCH CODE detail'} for a batch that failed, or {'error',
--   message} for one that raised a runtime error before it wrote (which Go
--   answers as such, not as a domain error), {'error', message, 1} after
--   (which Go answers as a batch that may have been applied). A batch
--   refused with NORAND (no random numbers for a strategy that draws) stops
--   the call: the later batches answer the same unrun, so that Go sends
--   them all again, with the numbers, in their order.

function ENTRY.dispatchMany(A)
  local cx, failed = callMeta()
  if not cx then return failed end
  local P = DISPATCH_MANY
  -- batch j's count is A[o + 1], its argument a A[o + 1 + D.a]
  local m, o, out = tonumber(A[P.m]), P.batches - 1, {}
  local now, ret, applied = 0, 0, 0
  -- (the own index's tails of its batches of several orders wait in Lua
  -- across the batches, own.lua's ownPend, and are written once below, or
  -- before a single order, dispatch.lua)
  cx.many = m > 1
  local norand -- (the reply of a batch refused with NORAND)
  for j = 1, m do
    local c = tonumber(A[o + 1])
    local r, new = norand, nil
    if not r then
      -- A runtime error of a batch (an invariant that does not hold, as
      -- the waterfill's "no room although the pool counted some", or a
      -- command that fails) ends that batch alone: Redis keeps what the
      -- batches before it wrote, so the call goes on, answers them and
      -- writes their tails and meta below. The batch is answered failed
      -- if it raised before it wrote (cx.wrote, dispatch.lua), else as
      -- one that may have been applied: what it wrote stays, and its
      -- tails and meta are written with the others'. (An error of
      -- redis.call is a table.)
      local ok
      ok, r, new = pcall(dispatchBatch, A, o + 1, c, cx)
      if not ok then r, new = {err = tostring(type(r) == 'table' and r.err or r), wrote = cx.wrote}, nil end
    end
    if new then
      now, ret, applied = cx.now, cx.ret, applied + 1
    elseif type(r) == 'table' and r.err then
      r = {'error', r.err, r.wrote and 1 or nil}
      if string.find(r[2], '^DISPATCH NORAND') then norand = r end
    end
    out[j] = r
    o = o + 1 + c
  end
  -- (and so does elig, cx.wf: waterfill.lua's wfPend, dispatch.lua)
  if cx.own then ownPend.flush(cx.own) end
  if cx.wf then wfPend.flush(cx.wf) end
  -- One sweep per batch applied, as separate calls would have made.
  if applied > 0 then cx.sw = sweepDue(now, ret, applied, cx.sw) end
  metaFlush(cx)
  return out
end
