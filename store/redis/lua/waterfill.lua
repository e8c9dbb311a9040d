-- waterfill.lua: the seed's waterfill over a ZSET of eligible Scales (member
-- compId, score orderCount), as balancing.Waterfill computes it. It
-- follows lib.lua in the library (functions.go).
--
-- A level i < N-1 holds D = (count[i+1] - count[i]) * (i+1) orders and emits
-- the ranks 0, i, i-1, ..., 1, 0, i, ...; the last level starts at
-- (2^31-1) mod N and descends the same way, wrapping. A run of equal counts
-- is skipped with one ZCOUNT, and only the ranks a batch takes are read
-- with ZRANGE, so a batch of M orders that crosses k levels of N Scales
-- costs O(k log N + M).

local LAST = 2147483647

-- wfFetch reads the entries of the ranks that take orders of a level emit,
-- start, start-1, ..., 0, top, top-1, ...: rank r's compId at at[2r + 1],
-- where ZRANGE WITHSCORES's reply has it; from all, that whole reply of the
-- ZSET, when the pass has read it (wfPass).
local function wfFetch(z, top, start, take, all)
  local at = {}
  -- (two ranges of ranks, lo..hi: start - a + 1..start, then the top ones
  -- if the level takes more; one loop, no closure: a closure and its
  -- upvalues are some 1.5k instructions a level)
  local a = math.min(take, start + 1)
  local lo, hi, last = start - a + 1, start, take <= a
  while true do
    if lo <= hi and all then
      for j = 2 * lo + 1, 2 * hi + 1, 2 do at[j] = all[j] end
    elseif lo <= hi then
      local r = redis.call('ZRANGE', z, lo, hi)
      for j = 1, #r do at[2 * (lo + j) - 1] = r[j] end
    end
    if last then return at end
    lo, hi, last = math.max(start + 1, top - (take - a) + 1), top, true
  end
end

-- wfPass runs the waterfill for up to want orders over ZSET z, which it
-- does not change, calling pick(compId, v) for each order in turn, v the
-- level's orderCount: every Scale of the level has it (with the pass's
-- picks) as the level starts, so a Scale first picked in it has it in z.
-- pick returns false to stop after that order. Before the picks of a level
-- it calls seen(at), if given, with the compIds they will come from (at:
-- rank r's compId at at[2r + 1], wfFetch). It returns the orders picked;
-- with lowestCap, 0 and the lowest Scale and its count, having picked
-- nothing, when want orders could take that Scale past MAXCOUNT (the level
-- rises at most want above it). With W, a plan (wfPend.plan) for a pass
-- that no pick stops, it gives W the take picks of a level at once
-- (wfPend.level) instead of calling pick for each: the ranks start,
-- start-1, ..., 0, top, top-1, ... in turn.
--
-- A pass over a ZSET of at most wfPend.ALL Scales that may take more than
-- one order reads it whole, with one ZRANGE, and finds the ranks and counts
-- in that reply (all: compId, score, …, rank r at 2r + 1), where each of a
-- level's reads was a command (some 4k instructions each; a batch of 100
-- over 16 Scales made about 8); without seen, the levels read their
-- compIds in all itself (a table made and filled a level cost some 3k
-- instructions). (Its ranks by number, 0 to n - 1: what a call may read
-- is bounded, which the cost tests count by its ranks.) With pre (wfPend,
-- below) the pass reads nothing: pre.all is elig as the call holds it, its
-- scores numbers.
--
-- wfPend is elig as a call of several batches (dispatch_many.lua) holds
-- it in Lua across its batches of several orders among Scales without
-- maxOrders (the waterfill's one pass, eligDone): the first such batch
-- reads elig whole and lex's names, every such batch plans on what the
-- call holds and changes it there, and the Scales whose counts changed
-- are written once, with one ZADD, at the call's end (flush), or before
-- anything else of the call reads or writes elig: a settling that has a
-- due Scale to read (health.lua's settleDue), a single order (wfOnePick),
-- a dry run (its copy of elig), a batch among Scales with maxOrders
-- (capCheck). For a
-- batch of 100 over 16 Scales a ZADD of 16 counts cost Redis some 90k
-- instructions and the ZRANGE that reads them back 45k (each score
-- printed by printf): three batches a call sent three of each
-- (red25, docs/benchmarks.md). The call sorts the Scales by count and
-- then by name itself: count * 64 + the name's place in lex, one number,
-- which table.sort orders without a Lua comparison. P: {n, all, lex (the
-- names by rank from 1), cnt (compId -> count), dirty (the compIds to
-- write), sorted (false: a batch changed cnt since all was last put in
-- order, wfPend.sort),
-- off (true: more than ALL Scales, or lex and elig disagree: the call
-- writes through)}, empty ({}) until the first batch that plans on it
-- reads elig (wfPend.load), and again after flush.
local wfPend = {ALL = 32, keys = {}}
local function wfPass(z, want, pick, seen, lowestCap, W, pre)
  local n, all
  if pre then
    n, all = pre.n, pre.all
  else
    n = redis.call('ZCARD', z)
    all = want > 1 and n <= wfPend.ALL and redis.call('ZRANGE', z, 0, n - 1, 'WITHSCORES')
  end
  local done, nxt = 0, 0
  while done < want and nxt < n do
    -- (the level's head, its compId and its score: two locals, no table)
    local hid, hv, top
    if all then
      hid, hv = all[2 * nxt + 1], all[2 * nxt + 2]
    else
      local head = redis.call('ZRANGE', z, nxt, nxt, 'WITHSCORES')
      hid, hv = head[1], head[2]
    end
    -- (pre's scores are numbers: no tonumber, a C call)
    local v = pre and hv or tonumber(hv)
    if lowestCap and nxt == 0 and v + want > MAXCOUNT then return 0, hid, v end
    if all then
      -- (ZCOUNT -inf v: the ranks are in order of score, so a rank above
      -- is in the level while its score is hv, which Redis writes the same
      -- for equal numbers (no num, a Lua call a rank); i steps over the
      -- scores, rank top + 1's at 2 * top + 4)
      local i, last = 2 * nxt + 4, 2 * n
      while i <= last and all[i] == hv do i = i + 2 end
      top = i / 2 - 2
    else
      top = redis.call('ZCOUNT', z, '-inf', hv) - 1
    end
    local start, take = 0, want - done
    if top == n - 1 then
      start = LAST % n
    elseif take > 1 then
      -- (one order never fills a level: the next count is above v)
      local above
      if all then
        above = pre and all[2 * top + 4] or num(all[2 * top + 4])
      else
        above = tonumber(redis.call('ZRANGE', z, top + 1, top + 1, 'WITHSCORES')[2])
      end
      -- D may exceed what a batch needs
      local d = (above - v) * (top + 1)
      if d < take then take = d end
    end
    local at
    if all and not seen then
      at = all
    elseif take == 1 and start == 0 and nxt == 0 then
      -- one order from rank 0, a single-order batch's usual case: the
      -- first level's head names it
      at = {hid}
    else
      at = wfFetch(z, top, start, take, all)
    end
    if seen then seen(at) end
    if W then
      wfPend.level(W, at, v, start, top, take)
      done = done + take
    else
      local i, last = 2 * start + 1, 2 * top + 1
      for _ = 1, take do
        done = done + 1
        if not pick(at[i], v) then return done end
        if i == 1 then i = last else i = i - 2 end
      end
    end
    nxt = top + 1
  end
  return done
end

-- wfPend.load reads elig whole into P, and lex's names; it returns false
-- (P.off) for a pool of more than ALL eligible Scales or one whose lex
-- and elig do not hold the same Scales.
function wfPend.load(P)
  local n = redis.call('ZCARD', K.elig)
  if n == 0 or n > wfPend.ALL then return false end
  local all = redis.call('ZRANGE', K.elig, 0, n - 1, 'WITHSCORES')
  local lex = redis.call('ZRANGE', K.lex, 0, -1)
  if #lex ~= n then return false end
  local cnt = {}
  for j = 1, n do cnt[lex[j]] = false end
  for j = 2, 2 * n, 2 do
    local id, v = all[j - 1], tonumber(all[j])
    if cnt[id] ~= false then return false end
    cnt[id], all[j] = v, v
  end
  P.n, P.all, P.lex, P.cnt, P.dirty, P.sorted = n, all, lex, cnt, {}, true
  return true
end

-- wfPend.sort puts P.all in elig's order again after a batch changed
-- counts (P.sorted false), before the next batch plans on it (the call's
-- last batch leaves it unsorted: flush reads cnt): by count, then by name
-- (lex's order), as one number each, count * 64 + the name's place in lex
-- (from 1; at most ALL < 64). Its
-- keys, wfPend.keys, are kept from batch to batch and call to call (at
-- most ALL numbers, cut to n: a list grown anew was five resizes a batch).
function wfPend.sort(P)
  local n, all, lex, cnt, keys = P.n, P.all, P.lex, P.cnt, wfPend.keys
  for j = 1, n do keys[j] = cnt[lex[j]] * 64 + j end
  for j = #keys, n + 1, -1 do keys[j] = nil end
  table.sort(keys)
  for j = 1, n do
    local key = keys[j]
    local r = key % 64
    all[2 * j - 1], all[2 * j] = lex[r], (key - r) / 64
  end
  P.sorted = true
end

-- wfPend.flush writes the counts that P changed to elig, with one ZADD,
-- and empties P: a later batch of the call reads elig again. (An empty P
-- costs a look-up: a call of single orders flushes before each.)
function wfPend.flush(P)
  if not P.all then return end
  local d = P.dirty
  if #d > 0 then
    -- (each count formatted once: most Scales share a count or two)
    local add, score = {}, {}
    for j = 1, #d do
      local id = d[j]
      local v = P.cnt[id]
      local s = score[v]
      if not s then s = fmt(v); score[v] = s end
      add[2 * j - 1], add[2 * j] = s, id
    end
    callMany('ZADD', K.elig, add, 2)
  end
  P.all = nil
end

-- wfAssign assigns n orders with the waterfill over elig and returns the
-- plan of stAssign (assign.lua), or nil and the error CAP, having changed
-- nothing; room is the pool's meta r. A Scale that
-- reaches its maxOrders ends a pass: the pass's picks
-- are applied to the ZSET, which the full Scale leaves, and the next pass
-- takes the rest. A dry run applies them to a scratch copy (tmp) instead,
-- deleted before it returns; a real one leaves elig as the batch ends.
-- wfAssign of one order among Scales without maxOrders comes in two
-- halves: wfOnePick reads where it goes, changing nothing, and wfOneTake
-- gives it the order. The pick is the lowest Scale (rank 0), unless every
-- Scale has its count, in which case the level starts at rank LAST mod N.
-- Two ranges say which, and ZCARD and a third range only then. wfOnePick
-- returns the Scale and its count, or nil and the error CAP.
local function wfOnePick()
  local head = redis.call('ZRANGE', K.elig, '0', '0', 'WITHSCORES')
  local id, v = head[1], tonumber(head[2])
  if not id then error('dispatch: no room although the pool counted some') end
  if v + 1 > MAXCOUNT then return nil, capFail(id, v, 1) end
  -- (scores as Redis writes them: equal numbers, equal strings)
  if redis.call('ZRANGE', K.elig, '-1', '-1', 'WITHSCORES')[2] == head[2] then
    local start = LAST % redis.call('ZCARD', K.elig)
    if start > 0 then id = redis.call('ZRANGE', K.elig, start, start)[1] end
  end
  return id, v
end

-- wfOneTake gives the order to Scale id (wfOnePick), which has no
-- maxOrders: nothing else of it changes (saveAssigned has nothing to do).
local function wfOneTake(id, dry)
  if not dry then redis.call('ZINCRBY', K.elig, '1', id) end
end

-- wfPend.plan is the plan of a batch of several orders (wfAssign), kept
-- from batch to batch and from call to call (the library's tables live as
-- long as its Lua state): {comps, cur, first, eligDone} as planAssign
-- returns it, nc (#comps so far), ids (the Scales of a pass, with
-- maxOrders), and cs, each Scale's record c by compId, which a plan's cur
-- takes again (wfPend.rec). A batch of 100 over 16
-- Scales made some 25 tables and grew each key by key, cur, first and ids
-- through five resizes each, and Lua spent some 600 instructions on a
-- table, 160 on a new key and 750 on a resize (tab26). Each plan empties
-- the last one's cur, first and ids first (nil keeps a table's slots, and
-- a key that comes again finds its own); comps keeps what lies past n,
-- which its readers never reach (they take n). Its users are done with a
-- plan before the next one is made (dispatch.lua, tick.lua, reassign.lua,
-- fail.lua). cs is emptied once it holds CS Scales (every pool's Scales
-- share it: a compId's c is made again for each plan that takes it).
wfPend.plan = {comps = {}, cur = {}, first = {}, eligDone = true, nc = 0, ids = {}, cs = {}, ncs = 0, CS = 4096}

-- wfPend.rec makes the record c of Scale id in plan W, which first meets
-- it at count v, with maxOrders max (0: none): what saveAssigned and the
-- own index read of it, its maxOrders and its count (out, base 0; out0 as
-- the plan found it), and k, its picks in the pass so far (pick's; a
-- level counts its picks into out at once). It is cur[id] for the rest of
-- the plan, and id joins first. (Called once a Scale a plan: a Scale met
-- again in a later level or pick is a look-up in cur, where a Lua call
-- costs some 300 instructions.)
function wfPend.rec(W, id, v, max)
  local c = W.cs[id]
  if c then
    c.st, c.max, c.base, c.out, c.out0, c.k = 'a', max, 0, v, v, 0
  else
    c = {st = 'a', max = max, base = 0, out = v, out0 = v, k = 0}
    W.cs[id], W.ncs = c, W.ncs + 1
  end
  local first = W.first
  W.cur[id], first[#first + 1] = c, id
  return c
end

-- wfPend.level gives plan W the take picks of a level of wfPass at count v
-- (at: rank r's compId at at[2r + 1]), from rank start down to 0 and then
-- from top down: each to comps in turn, and each Scale's to its record's
-- count at once (no Scale has a maxOrders, so no pick stops the pass). The
-- Scale of rank start - j (mod top + 1) takes every (top + 1)th pick from
-- the jth: the first top + 1 picks go one a Scale, and the rest repeat
-- them.
function wfPend.level(W, at, v, start, top, take)
  local m, comps, cur, w = W.nc, W.comps, W.cur, top + 1
  -- (take = q * w + r: the jth Scale takes q + 1 for j <= r, else q;
  -- worked out once, not with math.floor a Scale)
  local r = take % w
  local q = (take - r) / w
  local i, last = 2 * start + 1, 2 * top + 1
  for j = 1, take < w and take or w do
    local id = at[i]
    comps[m + j] = id
    local c = cur[id] or wfPend.rec(W, id, v, 0)
    if j <= r then c.out = c.out + q + 1 else c.out = c.out + q end
    if i == 1 then i = last else i = i - 2 end
  end
  -- (a copy an order: four VM instructions, where stepping the rank was
  -- six or seven)
  for j = m + w + 1, m + take do comps[j] = comps[j - w] end
  W.nc = m + take
end

local function wfAssign(n, dry, room, P)
  local z = K.elig
  -- Without room (meta r, as the caller read it), no eligible Scale has a
  -- maxOrders: the picks need no record, and the first pass checks the
  -- lowest Scale against MAXCOUNT; with, capCheck does.
  local limited = room > 0
  -- P: the call's elig (wfPend), for a batch of several among Scales
  -- without maxOrders that is not a dry run; any other writes it first.
  local pre
  if P then
    if limited or dry or n == 1 then
      wfPend.flush(P)
    elseif not P.off then
      if not P.all then P.off = not wfPend.load(P) end
      if not P.off then
        pre = P
        if not P.sorted then wfPend.sort(P) end
      end
    end
  end
  if n == 1 and not limited then
    local id, v = wfOnePick()
    if not id then return nil, v end
    wfOneTake(id, dry)
    -- (one list serves as comps and first: no caller changes them)
    local one = {id}
    return {comps = one, cur = {[id] = {st = 'a', max = 0, base = 0, out = v + 1, out0 = v, k = 0}},
      first = one, eligDone = true}
  end
  if limited then
    local capped = capCheck(n, true)
    if capped then return nil, capped end
  end
  local W = wfPend.plan
  local comps, cur, first, ids = W.comps, W.cur, W.first, W.ids -- comps: compId per order, in request order
  for j = #first, 1, -1 do cur[first[j]], first[j] = nil, nil end
  if W.ncs >= W.CS then W.cs, W.ncs = {}, 0 end
  W.nc = 0
  while W.nc < n do
    -- With maxOrders, a pick at a time: the Scales this pass picks (ids),
    -- their records read a level at a time in one HMGET (read), and a
    -- Scale that reaches its maxOrders ends the pass. Without, wfPass
    -- gives the plan a level at a time (wfPend.level), and one pass takes
    -- all n: its Scales are first.
    local pick, seen, read
    if limited then
      for j = #ids, 1, -1 do ids[j] = nil end
      read = {}
      seen = function(at)
        local want = {}
        for _, id in pairs(at) do
          if not cur[id] and read[id] == nil then want[#want + 1] = id end
        end
        local recs = hmgetList(K.scales, want)
        for j, id in ipairs(want) do read[id] = recs[j] end
      end
      pick = function(id, v)
        local c = cur[id] or wfPend.rec(W, id, v, recMax(read[id]))
        local k = c.k + 1
        if k == 1 then ids[#ids + 1] = id end
        c.k = k
        local m = W.nc + 1
        W.nc, comps[m] = m, id
        return c.max == 0 or c.out + k < c.max
      end
    end
    local got, capId, capCount = wfPass(z, n - W.nc, pick, seen, W.nc == 0 and not limited, not limited and W, pre)
    -- (the first pass only: nothing is written before it ends)
    if capId then return nil, capFail(capId, capCount, n) end
    if got == 0 then error('dispatch: no room although the pool counted some') end
    local pass = limited and ids or first
    if pre then
      -- (no maxOrders: one pass took all n, and nothing leaves elig)
      local cnt, d = pre.cnt, pre.dirty
      for j = 1, #pass do
        local id = pass[j]
        if not d[id] then d[id] = true; d[#d + 1] = id end
        cnt[id] = cur[id].out
      end
      pre.sorted = false
      return W
    end
    -- the scores as strings, each formatted once: a pass gives most of
    -- its Scales the same count or two (add made at its most, newList:
    -- 32 entries grown one by one were six resizes; na counts them)
    local add, na, rem, score = newList(2 * #pass), 0, {}, {}
    for j = 1, #pass do
      local id = pass[j]
      local c = cur[id]
      local count = c.out + c.k
      c.out, c.k = count, 0
      if c.max == 0 or count < c.max then
        local s = score[count]
        if not s then s = fmt(count); score[count] = s end
        na = na + 2
        add[na - 1], add[na] = s, id
      else
        rem[#rem + 1] = id
      end
    end
    if W.nc < n or not dry then
      if dry and z == K.elig then
        redis.call('ZUNIONSTORE', K.tmp, 1, K.elig)
        z = K.tmp
      end
      callMany('ZADD', z, add, 2, na)
      if #rem > 0 then callMany('ZREM', z, rem, 1) end
    end
  end
  if z == K.tmp then redis.call('DEL', K.tmp) end
  return W
end
