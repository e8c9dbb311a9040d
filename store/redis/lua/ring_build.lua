-- ring_build.lua: one step of building a pool's consistent-hash ring
-- before its strategy changes to consistent-hash, so that no call blocks
-- Redis for long: a ring of N Scales is N × VNODES points (ring.lua), which
-- one script would hash and place in seconds for thousands of Scales. The
-- pool keeps its strategy meanwhile, and pool_put.lua then switches without
-- building if the ring is ready (ringReady). The caller hashes the points.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (RING_BUILD): step: 'start' returns the version of the pool's
--   Scales (meta field sv) and empties the ring unless a build of that
--   version began (meta field rv), so that a build cut short resumes;
--   'add', if the version is still version, places scales: each compId
--   followed by its VNODES points in order (balancing.RingPoints), a Scale
--   no longer registered or already placed skipped.
-- Reply: {'started', version}, {'added'}, {'stale'} (a Scale came or went:
--   start again) or {'hashing'} (the pool already hashes: nothing to do).
--   Errors: DISPATCH NOPOOL.

function ENTRY.ringBuild(A)
  if not poolExists() then return fail('NOPOOL') end
  if redis.call('HGET', K.meta, 's') == HASHED then return {'hashing'} end
  local version = redis.call('HGET', K.meta, 'sv') or '0'
  if A[RING_BUILD.step] == 'start' then
    if redis.call('HGET', K.meta, 'rv') ~= version then
      redis.call('UNLINK', K.ring)
      redis.call('HSET', K.meta, 'rv', version)
    end
    return {'started', version}
  end
  if version ~= A[RING_BUILD.version] then return {'stale'} end
  local i = RING_BUILD.scales
  while i <= #A do
    local id = A[i]
    if redis.call('HEXISTS', K.scales, id) == 1 and
        not redis.call('ZSCORE', K.ring, id .. '#' .. (VNODES - 1)) then
      local args = {}
      for j = 0, VNODES - 1 do
        args[#args + 1] = A[i + 1 + j]
        args[#args + 1] = id .. '#' .. j
      end
      redis.call('ZADD', K.ring, unpack(args))
    end
    i = i + 1 + VNODES
  end
  return {'added'}
end
