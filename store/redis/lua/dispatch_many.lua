-- dispatch_many.lua: several batches of one pool, coalesced by a replica,
-- applied one after another as if each came in its own call: each is all
-- or nothing, and a batch sees the batches before it (an order id or
-- Idempotency-Key an earlier batch recorded).
--
-- ARGV: 1 m, then m batches, each its argument count c and then the c
--   arguments of dispatch.lua.
-- Reply: m replies in batch order, each dispatch.lua's reply or
--   {'error', 'DISPATCH CODE detail'} for a batch that failed.

local m, o, out = tonumber(ARGV[1]), 1, {}
for j = 1, m do
  local r = dispatchBatch(ARGV, o + 1)
  if r.err then r = {'error', r.err} end
  out[j] = r
  o = o + 1 + tonumber(ARGV[o + 1])
end
return out
