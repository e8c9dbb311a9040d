-- ceiling.lua: the Redis part of a dispatch and nothing else, the ceiling
-- that issue 6 measures the service against (docs/benchmarks.md).
--
-- KEYS[1]: the pool's load ZSET (member compId, score orderCount).
-- KEYS[2]: the order HASH (field order id, value compId).
-- ARGV[1]: an order id prefix (redis-benchmark's __rand_int__).
-- ARGV[2]: orders in the batch (default 1).
--
-- For each order: ZRANGE the load ZSET 0 0 (the least-loaded Scale),
-- ZINCRBY that winner, and one HSET for the order. No validation, no
-- idempotency, no batch record, no strategy logic: whatever the service
-- costs beyond this is its own.
local n = tonumber(ARGV[2] or '1')
local won
for i = 1, n do
  won = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  redis.call('ZINCRBY', KEYS[1], 1, won)
  redis.call('HSET', KEYS[2], ARGV[1] .. ':' .. i, won)
end
return n
