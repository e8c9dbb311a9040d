-- lib.lua: the helpers every function shares, the first file of the
-- library after its preamble (functions.go, preamble.go).
--
-- Keys: every function gets the keys of one pool that it uses, as
-- functions.go declares them for it (keys.go's names), and a call with a
-- token (callGet) the call's key after them. K names them: the preamble's
-- BIND binds K to the keys of the function being entered (functions.lua's
-- register), and K.<name> of a key the function does not declare raises
-- DISPATCH BUG, so that no redis.call gets a nil key. TestFunctionKeys
-- checks that each function declares the keys its code reaches.
--
-- Numbers are exact: every value stays below 2^53 and is formatted with fmt,
-- never tostring (which keeps only 14 digits). Strings are never compared
-- with < (Lua uses strcoll, and Redis sets the locale): see less.

-- The preamble (preamble.go) defines the constants shared with Go: SWEEP,
-- the expired records one call removes from each queue; CALLMS, how long
-- a call's reply is kept for a re-send (ms) when its token does not say
-- (callPut, resend.go's maxResend); LAYOUT, the layout of a pool's keys and
-- records (keys.go) in meta field lv; BFIELD, RFIELD, PFIELD, IFIELD, the
-- prefixes of the fields of K.orders that are not orders; MAXCOUNT, the most orders a Scale
-- holds (DESIGN §1); RANDDIGITS, the width of a random number; RANDOM,
-- the strategies that draw random numbers (balancing.Strategy.Random);
-- COUNTERS.

local WRITE = 1000    -- values per variadic command (unpack holds ~8000)

-- ENTRY holds the functions that functions.go registers (its lua names),
-- each defined by its own file as ENTRY.<name>: Lua 5.1 allows a chunk 200
-- local variables, which the library's helpers come close to, and entry
-- points need no local of their own. TestLibraryLocals keeps the count at
-- 190 or fewer.
local ENTRY = {}

-- fmt writes an integer: '%d' formats it as a C long (64 bits), exact
-- below 2^53 as '%.0f' is, for a small part of the cost of printf's
-- floating point (a fraction would be cut, not rounded: every value fmt
-- gets is whole).
local function fmt(x) return string.format('%d', x) end

-- num is tonumber for strings that come back call after call (meta's
-- fields and times that seldom change, settings among the arguments): it
-- remembers the numbers of the last NUMS strings it read, as converting
-- one costs more than a table lookup (strtod, twice in tonumber).
-- (The library's chunk holds at most 200 locals, Lua's limit: helpers
-- with state of their own keep it in a closure.)
local num = (function()
  local of, n = {}, 0
  return function(s)
    local v = of[s]
    if v == nil and s then
      v = tonumber(s)
      if v == nil then return nil end
      if n >= 64 then of, n = {}, 0 end
      of[s], n = v, n + 1
    end
    return v
  end
end)()

-- hex writes a non-negative integer below 2^53 in hexadecimal (read it
-- with tonumber(s, 16)): refs and chunk numbers.
local function hex(x) return string.format('%x', x) end

local function fail(code, detail)
  return redis.error_reply('DISPATCH ' .. code .. ' ' .. (detail or ''))
end

-- capFail is the error of a batch of n orders that could take Scale id,
-- which holds count orders, past MAXCOUNT.
local function capFail(id, count, n)
  return fail('CAP', id .. ' ' .. fmt(count) .. ' ' .. fmt(n))
end

-- split cuts s at each sep; with max, the last of max fields keeps the rest.
local function split(s, sep, max)
  local out, i = {}, 1
  while true do
    if max and #out == max - 1 then out[#out + 1] = string.sub(s, i); return out end
    local j = string.find(s, sep, i, true)
    if not j then out[#out + 1] = string.sub(s, i); return out end
    out[#out + 1] = string.sub(s, i, j - 1)
    i = j + 1
  end
end

-- less orders strings by bytes, as ZSET members and Go's strings.Compare do.
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- newList returns a list of n falses (false, not nil, so that # counts
-- them), for a caller to fill in any order: made with one allocation by
-- unpack into a constructor, where filling an empty table grows it about
-- log2(n) times, rehashing it whole each time, and keys that come out of
-- order land in its hash part first. Beyond WRITE, an empty table.
local newList = (function()
  local blank = {}
  for i = 1, WRITE do blank[i] = false end
  return function(n)
    if n > WRITE then return {} end
    return {unpack(blank, 1, n)}
  end
end)()

-- callMany sends cmd key with the arguments of list, in slices unpack can
-- hold (step: arguments per item, so that no item is cut).
local function callMany(cmd, key, list, step, n)
  local per = WRITE - WRITE % step
  n = n or #list
  for i = 1, n, per do
    redis.call(cmd, key, unpack(list, i, math.min(i + per - 1, n)))
  end
end

-- hsetMany writes field/value pairs (a flat list; its first n, all of it
-- without n).
local function hsetMany(key, kv, n) callMany('HSET', key, kv, 2, n) end

-- hmgetList reads the fields of a hash, fields[from..to] (a list; the
-- whole of it without from and to), into a list of their values in the
-- same order (false for a missing field; nil in RESP3, redis.setresp),
-- WRITE fields per HMGET.
local function hmgetList(key, fields, from, to)
  from, to = from or 1, to or #fields
  if to - from < WRITE then
    if to < from then return {} end
    return redis.call('HMGET', key, unpack(fields, from, to))
  end
  local out = {}
  for i = from, to, WRITE do
    local last = math.min(i + WRITE - 1, to)
    local v = redis.call('HMGET', key, unpack(fields, i, last))
    -- (by count, not #v: a RESP3 reply has holes)
    for j = 1, last - i + 1 do out[i - from + j] = v[j] end
  end
  return out
end

-- recMax reads the maxOrders of a Scale record (see SCALE below) alone,
-- where a dispatch needs no other field.
local function recMax(rec) return tonumber(string.match(rec, '^[^|]*|[^|]*|(%d+)|')) end

-- capCheck returns the error of a batch of n orders that could take an
-- eligible Scale without maxOrders (only such a Scale can pass MAXCOUNT, as
-- maxOrders is at most that) past MAXCOUNT, or nil: with lowest, the
-- lowest such Scale is checked (the waterfill raises no Scale more than n
-- above it, and it stays to the end), else the highest (any Scale may get
-- all n). Unless the highest eligible Scale is within reach of MAXCOUNT,
-- one ZRANGE says there is nothing to find; else it reads the ranks from
-- the bottom or the top, 256 at a time, and their records.
local function capCheck(n, lowest)
  local top = redis.call('ZRANGE', K.elig, -1, -1, 'WITHSCORES')
  if not top[2] or tonumber(top[2]) + n <= MAXCOUNT then return nil end
  local at = 0
  while true do
    local r
    if lowest then
      r = redis.call('ZRANGE', K.elig, at, at + 255, 'WITHSCORES')
    else
      r = redis.call('ZRANGE', K.elig, at, at + 255, 'REV', 'WITHSCORES')
    end
    if #r == 0 then return nil end
    local ids = {}
    for j = 1, #r, 2 do ids[#ids + 1] = r[j] end
    local recs = hmgetList(K.scales, ids)
    for j, id in ipairs(ids) do
      local count = tonumber(r[2 * j])
      if not lowest and count + n <= MAXCOUNT then return nil end
      if recMax(recs[j]) == 0 then
        if count + n > MAXCOUNT then return capFail(id, count, n) end
        return nil
      end
    end
    at = at + 256
  end
end

-- Scales: "weight|state|maxOrders|baseLoad|activeSinceMs|avgMs", and for a
-- Scale registered by a build that keeps health (DESIGN §8, health.lua)
-- seven fields more, "|health|lastHeartbeatMs|ejectedUntilMs|ejections|
-- failures|failWindowStartMs|lastFailMs": state a (active), d (draining),
-- x (down); health u (up), l (lapsed), e (ejected), as last recorded;
-- ejections the consecutive ones; failures those counted in the window
-- that opened at failWindowStart (dispatch.HealthOptions.CountFailure);
-- times empty for none. A record of six fields is up and was never
-- heartbeated nor reported. A Scale's orderCount is its score in elig or
-- load (getScale), and its outstanding orders are orderCount - baseLoad: a
-- dispatch changes elig and leaves the record as it is.
local SCALE = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)(.*)$'
local HEALTH = '^|(%a)|(%d*)|(%d*)|(%d*)|(%d*)|(%d*)|(%d*)$'

-- decScale reads record s of a Scale whose orderCount (its score in elig or
-- load) is n.
local function decScale(s, n)
  if not s then return nil end
  local w, st, max, base, since, avg, rest = string.match(s, SCALE)
  base = tonumber(base)
  local c = {w = tonumber(w), st = st, max = tonumber(max), out = tonumber(n) - base,
    base = base, since = since, avg = avg, h = 'u', hb = '', eu = '', ej = 0, f = 0,
    fs = '', lf = ''}
  if rest ~= '' then
    local h, hb, eu, ej, f, fs, lf = string.match(rest, HEALTH)
    c.h, c.hb, c.eu, c.ej, c.f, c.fs, c.lf = h, hb, eu, tonumber(ej), tonumber(f), fs, lf
  end
  return c
end

-- encScale writes the numbers with Lua's own conversion (14 significant
-- digits), which is exact for them: weights and counts stay below 2^32
-- (dispatch.MaxOrderCount and the Scale limits); times are kept as the
-- strings they were given as.
local function encScale(c)
  local s = c.w .. '|' .. c.st .. '|' .. c.max .. '|' .. c.base .. '|' .. c.since .. '|' .. c.avg
  if c.h == 'u' and c.hb == '' and c.eu == '' and c.ej == 0 and c.f == 0 and c.lf == '' then
    return s
  end
  return s .. '|' .. c.h .. '|' .. c.hb .. '|' .. c.eu .. '|' .. c.ej .. '|' .. c.f .. '|' ..
    c.fs .. '|' .. c.lf
end

-- scaleView is a Scale as replies show it: "weight|state|maxOrders|
-- outstanding|baseLoad|activeSinceMs|avgMs|health|lastHeartbeatMs|
-- ejectedUntilMs|ejections|failures|failWindowStartMs|lastFailMs", its
-- health as recorded.
local function scaleView(c)
  return c.w .. '|' .. c.st .. '|' .. c.max .. '|' .. c.out .. '|' .. c.base .. '|' ..
    c.since .. '|' .. c.avg .. '|' .. c.h .. '|' .. c.hb .. '|' .. c.eu .. '|' .. c.ej .. '|' ..
    c.f .. '|' .. c.fs .. '|' .. c.lf
end

-- A Scale's orderCount is its score in elig while it is eligible, else in
-- load: each Scale is in exactly one of the two, so that a dispatch
-- updates one sorted set.
-- A failure report re-dispatches its order among the Scales other than the
-- one reported (fail.lua): that Scale, excluded, reads as excluded (ex), so
-- that no strategy picks it, consistent-hash's ring walk included.
local excluded = nil

local function getScale(id)
  local s = redis.call('HGET', K.scales, id)
  if not s then return nil end
  local c = decScale(s, redis.call('ZSCORE', K.elig, id) or redis.call('ZSCORE', K.load, id))
  if id == excluded then c.ex = true end
  return c
end

local function copyScale(c)
  return {w = c.w, st = c.st, max = c.max, out = c.out, base = c.base, since = c.since,
    avg = c.avg, h = c.h, hb = c.hb, eu = c.eu, ej = c.ej, f = c.f, fs = c.fs, lf = c.lf}
end

local function count(c) return c.base + c.out end

-- eligible: active, up and below its maxOrders (DESIGN §8).
local function eligible(c)
  return c ~= nil and c.st == 'a' and c.h == 'u' and not c.ex and (c.max == 0 or count(c) < c.max)
end

-- The health indexes (dispatch/healthstore.go, Settling), by which a call
-- finds the Scales whose health is due to change without reading the pool:
-- lease holds the Scales not recorded lapsed and lapsed the others, each
-- by lastHeartbeat; ejq the Scales recorded ejected by ejectedUntil; lapq
-- (score 0, so by compId) the lapsed Scales that hold orders, which
-- onLapse reassign empties. healthIndex moves Scale id from record o (nil:
-- new) to c (nil: removed).
local function healthIndex(id, o, c)
  local ol, ohb, oe, oq = false, nil, false, false
  if o then ol, ohb, oe, oq = o.h == 'l', o.hb, o.h == 'e', o.h == 'l' and o.out > 0 end
  if not c then
    if o then
      redis.call('ZREM', ol and K.lapsed or K.lease, id)
      if oe then redis.call('ZREM', K.ejq, id) end
      if oq then redis.call('ZREM', K.lapq, id) end
    end
    return
  end
  local cl, ce, cq = c.h == 'l', c.h == 'e', c.h == 'l' and c.out > 0
  if not o or ol ~= cl or ohb ~= c.hb then
    redis.call('ZADD', cl and K.lapsed or K.lease, tonumber(c.hb) or 0, id)
    if o and ol ~= cl then redis.call('ZREM', ol and K.lapsed or K.lease, id) end
    -- a later heartbeat only puts off when a Scale comes due: meta's hd
    -- (health.lua's settleCached) stays
    if not o or ol ~= cl or (tonumber(c.hb) or 0) < (tonumber(ohb) or 0) then
      redis.call('HDEL', K.meta, 'hd')
    end
  end
  if ce and (not oe or o.eu ~= c.eu) then
    redis.call('ZADD', K.ejq, c.eu, id)
    redis.call('HDEL', K.meta, 'hd')
  elseif oe and not ce then
    redis.call('ZREM', K.ejq, id)
  end
  if cq and not oq then
    redis.call('ZADD', K.lapq, 0, id)
  elseif oq and not cq then
    redis.call('ZREM', K.lapq, id)
  end
end

-- agg collects the changes of the pool's free-room aggregates: u counts the
-- eligible Scales without maxOrders, r sums maxOrders - orderCount over the
-- other eligible Scales. flushAgg writes them to meta.
local agg = {u = 0, r = 0}

local function account(c, sign)
  if not eligible(c) then return end
  if c.max == 0 then agg.u = agg.u + sign else agg.r = agg.r + sign * (c.max - count(c)) end
end

local function flushAgg()
  if agg.u ~= 0 then redis.call('HINCRBY', K.meta, 'u', fmt(agg.u)) end
  if agg.r ~= 0 then redis.call('HINCRBY', K.meta, 'r', fmt(agg.r)) end
  agg.u, agg.r = 0, 0
end

-- enter starts a call, its keys bound (functions.lua's register): it
-- clears what an earlier call of a library function may have left in agg
-- and excluded (one that failed half-way). Its first call after the
-- library loads sets the pause of the functions' Lua garbage collector
-- (which FUNCTION LOAD does not reach) to GCPAUSE: a cycle then starts
-- when the heap has grown to GCPAUSE % of what the last one left, not to
-- Lua's 200 %. A call leaves garbage in proportion to its orders (its
-- arguments, replies, lists and strings), and a cycle walks the whole
-- heap, the library's code and tables: at 200 % the collector cost a
-- batch of 100 about 1k instructions an order, and fewer cycles of the
-- same heap cost less (cpu22, docs/benchmarks.md). The heap peaks at
-- GCPAUSE % of what lives in it (docs/operations.md).
local GCPAUSE = 400
local enter = (function()
  local tuned = false
  return function()
    if not tuned then
      collectgarbage('setpause', GCPAUSE)
      tuned = true
    end
    excluded = nil
    agg.u, agg.r = 0, 0
  end
end)()

-- saveScales replaces the records of Scales ids, old[id] (nil: new) by
-- new[id], in scales, elig or load, lex (see getScale) and the aggregates,
-- with one variadic write per key for all of them. With eligDone the
-- caller has updated elig.
local function saveScales(ids, old, new, eligDone)
  local skv, load, loadRem, add, rem, lexAdd, lexRem = {}, {}, {}, {}, {}, {}, {}
  for j = 1, #ids do
    local id = ids[j]
    local o, c = old[id], new[id]
    account(o, -1)
    account(c, 1)
    healthIndex(id, o, c)
    if not o or encScale(o) ~= encScale(c) then
      skv[#skv + 1] = id
      skv[#skv + 1] = encScale(c)
    end
    local was, is, moved = eligible(o), eligible(c), not o or count(o) ~= count(c)
    -- lex holds the eligible Scales by compId alone (score 0), for the
    -- strategies that pick by rank or by name.
    if is and not was then
      lexAdd[#lexAdd + 1] = 0
      lexAdd[#lexAdd + 1] = id
    elseif was and not is then
      lexRem[#lexRem + 1] = id
    end
    if is then
      if not eligDone and (moved or not was) then
        add[#add + 1] = fmt(count(c))
        add[#add + 1] = id
      end
      if o and not was then loadRem[#loadRem + 1] = id end
    else
      if moved or was then
        load[#load + 1] = fmt(count(c))
        load[#load + 1] = id
      end
      if was and not eligDone then rem[#rem + 1] = id end
    end
  end
  hsetMany(K.scales, skv)
  callMany('ZADD', K.load, load, 2)
  callMany('ZREM', K.load, loadRem, 1)
  callMany('ZADD', K.lex, lexAdd, 2)
  callMany('ZREM', K.lex, lexRem, 1)
  callMany('ZADD', K.elig, add, 2)
  callMany('ZREM', K.elig, rem, 1)
end

-- saveScale replaces Scale id's record old (nil: new) by new (nil: removed);
-- see saveScales.
local function saveScale(id, old, new, eligDone)
  if new then return saveScales({id}, {[id] = old}, {[id] = new}, eligDone) end
  account(old, -1)
  healthIndex(id, old, nil)
  redis.call('HDEL', K.scales, id)
  if eligible(old) then
    redis.call('ZREM', K.elig, id)
    redis.call('ZREM', K.lex, id)
  else
    redis.call('ZREM', K.load, id)
  end
end

-- Call replies: a call whose reply a second run could not recompute
-- (created, deleted, how many completed, where orders moved) carries a
-- token "<random>:<ms>" and its own key (K.call, named after the token),
-- in which it keeps its reply for ms (CALLMS for a token without one): as
-- long as the Go call may wait for a reply (resend.go). A run that go-redis
-- re-sends after a lost reply or a read timeout finds it and answers as
-- the first run did.
local function callGet(tok)
  if tok == '' or not K.call then return nil end
  return redis.call('GET', K.call) or nil
end

local function callPut(tok, reply)
  if tok == '' or not K.call then return end
  redis.call('SET', K.call, reply, 'PX', tonumber(string.match(tok, ':(%d+)$')) or CALLMS)
end

-- randPair returns the two random numbers of order i in s: one string of
-- integers below 2^53 in RANDDIGITS hex digits each, two per order
-- (strategies.go's appendRand); numbers it lacks count as 0.
local function randPair(s, i)
  local at = (i - 1) * 2 * RANDDIGITS
  return tonumber(string.sub(s, at + 1, at + RANDDIGITS), 16) or 0,
    tonumber(string.sub(s, at + RANDDIGITS + 1, at + 2 * RANDDIGITS), 16) or 0
end

-- orderPicks returns what planAssign (assign.lua) takes of orders 1..n,
-- ids[io + i] naming order i and keys[ko + i] its key ('' none; keys nil:
-- no order has one; io and ko 0 when nil): rnd(i), order i's random
-- numbers in s (randPair), and hashKey(i), what consistent-hash hashes, the
-- key, else the id. Every call that picks Scales (dispatch, fail, reassign,
-- tick) takes them so.
local function orderPicks(s, ids, keys, io, ko)
  io, ko = io or 0, ko or 0
  local function rnd(i) return randPair(s, i) end
  local function hashKey(i)
    local k = keys and keys[ko + i] or ''
    if k == '' then return ids[io + i] end
    return k
  end
  return rnd, hashKey
end

local function poolExists() return redis.call('EXISTS', K.meta) == 1 end

-- COUNTERS (the preamble's) are the pool's counts since its creation
-- (dispatch.Counters), fields of meta that the call that makes a change
-- raises by how much it changed, in the same call: a re-sent call changes
-- nothing more, so it counts nothing more. watch.lua reads them.
local function countUp(what, n)
  if n > 0 then redis.call('HINCRBY', K.meta, COUNTERS[what], n) end
end
