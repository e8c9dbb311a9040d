-- ring.lua: the consistent-hash ring of balancing.Ring, kept in ZSET ring
-- while the pool's strategy is consistent-hash, for the functions that
-- register, delete and dispatch (functions.go).
--
-- Every registered Scale, eligible or not, places VNODES points: member
-- compId#j (j = 0 … VNODES-1 in decimal), score the first 13 hex digits of
-- SHA-1(compId#j), an integer below 2^52 and so exact in a double. Equal
-- scores sort by member bytes, and '#' sorts below every byte a compId may
-- hold, so the members compare as their compIds, as in balancing.Ring.

-- (VNODES is the preamble's, balancing.DefaultVNodes; HASHED, the name of
-- the strategy of kind Hashed in balancing's registry, too.)

-- hashPoint is balancing's hashPoint: KeyPoint of an order's key, and the
-- ring position of compId#j.
local function hashPoint(s)
  return tonumber(string.sub(redis.sha1hex(s), 1, 13), 16)
end

-- ringPlace puts Scale id's points on the ring.
local function ringPlace(id)
  local args = {}
  for j = 0, VNODES - 1 do
    local m = id .. '#' .. j
    args[#args + 1] = fmt(hashPoint(m))
    args[#args + 1] = m
  end
  redis.call('ZADD', K.ring, unpack(args))
end

-- ringTrack adds (add true) or removes the points of a Scale registered or
-- deleted, if the pool hashes. Either way it counts the change in meta
-- field sv, the version of the pool's set of Scales, which a ring built in
-- steps (ring_build.lua) checks.
local function ringTrack(id, add)
  redis.call('HINCRBY', K.meta, 'sv', 1)
  if redis.call('HGET', K.meta, 's') ~= HASHED then return end
  if add then ringPlace(id); return end
  local members = {}
  for j = 0, VNODES - 1 do members[#members + 1] = id .. '#' .. j end
  redis.call('ZREM', K.ring, unpack(members))
end

-- ringReady reports whether the ring holds the points of every Scale of
-- version (ring_build.lua built it in steps, and no Scale came or went
-- since it began).
local function ringReady(version)
  if version == '' or (redis.call('HGET', K.meta, 'sv') or '0') ~= version then return false end
  return redis.call('ZCARD', K.ring) == redis.call('HLEN', K.scales) * VNODES
end

-- ringReset drops the ring and, for a pool that now hashes, builds it over
-- every registered Scale: O(Scales × VNODES), once per change of strategy,
-- unless the ring was built in steps for the pool's current Scales
-- (version, '' if not).
local function ringReset(strategy, version)
  if strategy == HASHED and ringReady(version) then return end
  redis.call('UNLINK', K.ring)
  if strategy ~= HASHED then return end
  for _, id in ipairs(redis.call('HKEYS', K.scales)) do ringPlace(id) end
end

-- ringLookup returns the Scale of key: that of the first point at or after
-- KeyPoint(key), wrapping, for which ok(compId) holds; points of other
-- Scales are walked past. Finding the start reads O(log P) of the ring's P
-- points; the walk reads pages of points until ok holds. It returns nil if
-- no point's Scale is ok.
local function ringLookup(key, ok)
  local size = redis.call('ZCARD', K.ring)
  if size == 0 then return nil end
  local start = redis.call('ZCOUNT', K.ring, '-inf', '(' .. fmt(hashPoint(key)))
  local seen, page = 0, 4
  while seen < size do
    local lo = (start + seen) % size
    local hi = math.min(lo + math.min(page, size - seen), size) - 1
    for _, m in ipairs(redis.call('ZRANGE', K.ring, lo, hi)) do
      local id = string.sub(m, 1, string.find(m, '#', 1, true) - 1)
      if ok(id) then return id end
    end
    seen = seen + hi - lo + 1
    page = math.min(page * 2, 256)
  end
  return nil
end
