-- health.lua: Scale health (DESIGN §8), a port of dispatch/health.go and
-- dispatch/healthstore.go, function for function, for the functions that
-- settle a pool's Scales, report a failure or tick (functions.go).
--
-- The pool's options live in meta: ht heartbeatTimeout ms (absent: 0,
-- off), ls leasesSince ms, ol onLapse (absent: hold), mf maxFails (absent:
-- 0), fw failWindow ms, et ejectTime ms (absent: the defaults below), jd the
-- changes the journal dropped since a tick last took them. A Scale's health
-- fields are in its record (lib.lua, SCALE); the indexes that find the due
-- Scales are kept by lib.lua's healthIndex.

-- The preamble (preamble.go) defines their defaults and limits from
-- package dispatch: FAILWINDOW (DefaultFailWindow), EJECTTIME
-- (DefaultEjectTime), EJECTFACTOR (MaxEjectionFactor), JOURNAL (MaxJournal).

-- healthOpts reads the pool's options; m, if given, holds meta's ht and ls
-- as the caller read them.
local function healthOpts(m)
  local v = redis.call('HMGET', K.meta, 'ol', 'mf', 'fw', 'et')
  local o = {ol = v[1] or 'hold', mf = tonumber(v[2]) or 0, fw = tonumber(v[3]) or FAILWINDOW,
    et = tonumber(v[4]) or EJECTTIME}
  if not m then m = redis.call('HMGET', K.meta, 'ht', 'ls') end
  o.ht, o.ls = tonumber(m[1]) or 0, tonumber(m[2]) or 0
  return o
end

-- leaseEnd is HealthOptions.LeaseEnd: the later of the last heartbeat and
-- leasesSince, plus the timeout.
local function leaseEnd(c, o)
  local hb = tonumber(c.hb)
  if not hb or o.ls > hb then hb = o.ls end
  return hb + o.ht
end

-- healthAt is HealthOptions.HealthAt: lapsed outranks ejected.
local function healthAt(c, now, o)
  if o.ht > 0 and now >= leaseEnd(c, o) then return 'l' end
  local eu = tonumber(c.eu)
  if eu and now < eu then return 'e' end
  return 'u'
end

-- journalAdd appends a change to the pool's journal: "compId|from|to|atMs",
-- dropping the oldest beyond JOURNAL (counted in meta jd).
local function journalAdd(id, from, to, at)
  local n = redis.call('RPUSH', K.journal, id .. '|' .. from .. '|' .. to .. '|' .. fmt(at))
  if n > JOURNAL then
    redis.call('LTRIM', K.journal, n - JOURNAL, -1)
    redis.call('HINCRBY', K.meta, 'jd', n - JOURNAL)
  end
end

-- settle is HealthOptions.Settle on Scale record c (changed in place) of
-- id: it records the health at now and journals the change. It reports
-- whether there was one.
local function settle(id, c, now, o)
  local to = healthAt(c, now, o)
  if to == c.h then return false end
  local at = now
  local eu = tonumber(c.eu)
  if to == 'l' then
    at = leaseEnd(c, o)
  elseif c.h == 'e' and eu and eu <= now then
    at = eu -- the ejection ended by itself
  end
  if to == 'u' and c.st == 'a' then c.since = fmt(at) end
  journalAdd(id, c.h, to, at)
  c.h = to
  return true
end

-- settleIds settles the Scales ids and saves those that changed; it
-- returns how many changed.
local function settleIds(ids, now, o)
  local changed = 0
  for _, id in ipairs(ids) do
    local c = getScale(id)
    if c then
      local n = copyScale(c)
      if settle(id, n, now, o) then
        saveScale(id, c, n)
        changed = changed + 1
      end
    end
  end
  return changed
end

-- dueIds returns up to limit Scales of one step of the settling order
-- (healthstore.go): 'lapse' the Scales not recorded lapsed whose lease has
-- run out, 'eject' the recorded ejected whose ejection has ended, 'revive'
-- the recorded lapsed whose lease runs again (heartbeats turned off, or a
-- longer timeout). Each is a range of an index, in the order (time,
-- compId) that a ZSET keeps, after a probe of its first or last entry, so
-- that with none due a step reads one entry.
local function dueIds(step, now, o, limit)
  if step == 'lapse' then
    -- with leasesSince later than now - ht no lease has run out
    if o.ht <= 0 or o.ls + o.ht > now then return {} end
    local first = redis.call('ZRANGE', K.lease, 0, 0, 'WITHSCORES')
    if not first[2] or tonumber(first[2]) > now - o.ht then return {} end
    return redis.call('ZRANGE', K.lease, '-inf', fmt(now - o.ht), 'BYSCORE', 'LIMIT', 0, limit)
  elseif step == 'eject' then
    local first = redis.call('ZRANGE', K.ejq, 0, 0, 'WITHSCORES')
    if not first[2] or tonumber(first[2]) > now then return {} end
    return redis.call('ZRANGE', K.ejq, '-inf', fmt(now), 'BYSCORE', 'LIMIT', 0, limit)
  end
  if o.ht <= 0 or o.ls + o.ht > now then
    if redis.call('EXISTS', K.lapsed) == 0 then return {} end
    return redis.call('ZRANGE', K.lapsed, 0, limit - 1)
  end
  local last = redis.call('ZRANGE', K.lapsed, -1, -1, 'WITHSCORES')
  if not last[2] or tonumber(last[2]) <= now - o.ht then return {} end
  return redis.call('ZRANGE', K.lapsed, '(' .. fmt(now - o.ht), '+inf', 'BYSCORE', 'LIMIT', 0, limit)
end

local STEPS = {'lapse', 'eject', 'revive'}
local SETTLEPAGE = 64 -- Scales a call without a limit reads at a time

-- settleDue settles the pool's due Scales at now, at most limit of them
-- (nil: every one, a page at a time), in the settling order, and returns
-- how many it settled. With none due it reads at most three entries.
-- P, the elig a call of several batches holds (waterfill.lua's wfPend),
-- is written before a due Scale is read.
local function settleDue(now, o, limit, P)
  local done = 0
  -- no Scale lapsed or ejected, no lease run out: one command
  if (o.ht <= 0 or o.ls + o.ht > now) and redis.call('EXISTS', K.ejq, K.lapsed) == 0 then
    return 0
  end
  for _, step in ipairs(STEPS) do
    while true do
      local want = SETTLEPAGE
      if limit then want = limit - done end
      if want <= 0 then break end
      local ids = dueIds(step, now, o, want)
      if P and #ids > 0 then wfPend.flush(P) end
      local changed = settleIds(ids, now, o)
      done = done + changed
      -- (a settled Scale leaves the range: the next page starts at 0)
      if limit or #ids < want or changed == 0 then break end
    end
  end
  flushAgg()
  return done
end

-- nextDue returns when a Scale's health comes due by itself at the
-- earliest, as meta's hd holds it: the first lease to run out (the later
-- of its last heartbeat and leasesSince, plus the timeout) or ejection to
-- end, NEVER for none, followed by 'r' while a Scale is recorded lapsed
-- (whose lease may run again at an earlier time, given a clock behind).
local function nextDue(o)
  local t = NEVER
  if o.ht > 0 then
    local first = redis.call('ZRANGE', K.lease, 0, 0, 'WITHSCORES')
    if first[2] then t = math.max(o.ls, tonumber(first[2])) + o.ht end
  end
  local e = redis.call('ZRANGE', K.ejq, 0, 0, 'WITHSCORES')
  if e[2] then t = math.min(t, tonumber(e[2])) end
  if redis.call('EXISTS', K.lapsed) == 1 then return fmt(t) .. 'r' end
  return fmt(t)
end

-- settleCached is settleDue for every due Scale at now, given meta's hd
-- as the caller read it (false: absent): before that time no lease runs
-- out and no ejection ends, so a call reads nothing more unless a Scale
-- is recorded lapsed. Every change that may bring that time closer drops
-- hd (lib.lua's healthIndex, pool_put.lua). It returns how many Scales it
-- settled and hd as it is after. The last hd read is remembered (hdS, its
-- time hdT, hdR whether it says 'r'), as most calls read the same. P, the
-- elig that a call of several batches holds (waterfill.lua's wfPend), is
-- written before a Scale due is read (settleDue).
local settleCached = (function()
  local hdS, hdT, hdR = false, nil, false
  return function(now, hd, P)
    if hd ~= hdS then
      hdS, hdT = hd, hd and tonumber(string.match(hd, '^(%d+)'))
      hdR = hd and string.find(hd, 'r', 1, true) ~= nil
    end
    local early = hdT and now < hdT
    if early and not hdR then return 0, hd end
    local m = redis.call('HMGET', K.meta, 'ht', 'ls')
    local o = {ht = tonumber(m[1]) or 0, ls = tonumber(m[2]) or 0}
    local done = settleDue(now, o, nil, P)
    if early and done == 0 then return 0, hd end
    return done, nextDue(o)
  end
end)()

-- anyDue reports whether a Scale is due at now.
local function anyDue(now, o)
  for _, step in ipairs(STEPS) do
    if #dueIds(step, now, o, 1) > 0 then return true end
  end
  return false
end

-- failuresAt is HealthOptions.FailuresAt.
local function failuresAt(c, now, o)
  local fs = tonumber(c.fs)
  if c.f == 0 or not fs or now >= fs + o.fw then return 0 end
  return c.f
end

-- failureCounts is HealthOptions.FailureCounts: not while ejected.
local function failureCounts(c, now)
  local eu = tonumber(c.eu)
  return not eu or now >= eu
end

-- countFailure is HealthOptions.CountFailure on record c (in place); it
-- reports whether the report ejected the Scale.
local function countFailure(c, now, o)
  local quiet = tonumber(c.lf)
  local eu = tonumber(c.eu)
  if eu and (not quiet or eu > quiet) then quiet = eu end
  if c.ej > 0 and (not quiet or now >= quiet + o.fw) then c.ej = 0 end
  if failuresAt(c, now, o) == 0 then
    c.fs, c.f = fmt(now), 1
  else
    c.f = c.f + 1
  end
  c.lf = fmt(now)
  if o.mf <= 0 or c.f < o.mf then return false end
  c.ej = c.ej + 1
  c.eu = fmt(now + o.et * math.min(c.ej, EJECTFACTOR))
  c.f, c.fs = 0, ''
  return true
end
