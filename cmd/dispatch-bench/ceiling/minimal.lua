-- minimal.lua: the least a batch dispatch can ask of Redis, the script that
-- issue 21 measures the service's Redis work per order against
-- (docs/benchmarks.md, redis-cpu.sh) and that the thin service
-- (dispatch-bench thin) runs for every batch.
--
-- KEYS[1]: the pool's load ZSET (member compId, score orderCount).
-- KEYS[2]: the order HASH (field order id, value compId).
-- ARGV[1]: an order id prefix (redis-benchmark's __rand_int__).
-- ARGV[2]: orders in the batch (default 1).
-- ARGV[3…]: the batch's order ids, when given (the thin service); then
--   ARGV[2] must equal their number and ARGV[1] is not used. Without them
--   order i is named ARGV[1] .. ':' .. i.
-- Returns the number of orders.
--
-- One ZRANGE WITHSCORES reads the whole pool, least loaded first; the
-- batch is spread by water-filling (the least loaded Scales are raised to
-- a common level, the same counts as taking the least loaded Scale order
-- after order); one ZINCRBY per distinct winner and one HSET per order.
-- No validation, no idempotency, no batch record, no strategy choice: what
-- the service's script costs beyond this is its own.
local n = tonumber(ARGV[2] or '1')
local pool = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local k = #pool / 2
local id, load = {}, {}
for j = 1, k do
  id[j], load[j] = pool[2 * j - 1], tonumber(pool[2 * j])
end
-- Raise the first w Scales to the level of Scale w + 1 while the batch
-- lasts; what is left is shared evenly among the first w, the first ones
-- (least loaded, then lowest compId, ZRANGE's order) taking one more.
local w, left = 1, n
while w < k and left >= w * (load[w + 1] - load[w]) do
  left = left - w * (load[w + 1] - load[w])
  w = w + 1
end
local level = load[w] + math.floor(left / w)
local extra = left % w
local named = #ARGV > 2
local o = 0
for j = 1, w do
  local add = level - load[j]
  if j <= extra then add = add + 1 end
  if add > 0 then
    redis.call('ZINCRBY', KEYS[1], add, id[j])
    for _ = 1, add do
      o = o + 1
      local order = named and ARGV[2 + o] or (ARGV[1] .. ':' .. o)
      redis.call('HSET', KEYS[2], order, id[j])
    end
  end
end
return n
