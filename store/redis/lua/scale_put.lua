-- scale_put.lua: register a Scale or update the fields given.
--
-- KEYS: the pool's keys (lib.lua).
-- ARGV: 1 compId, 2 nowMs, 3 retentionMs, 4 call token, 5 weight, 6 state
--   (a, d or x), 7 maxOrders, 8 orderCount; '' keeps the field (or takes
--   the default: weight 1, active, no maxOrders, orderCount 0); 9 the most
--   Scales a pool may hold.
-- Reply: {created (1 or 0), the Scale as scaleView shows it}. Errors: DISPATCH NOPOOL, FULL.

local id, now, ret, tok = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
if not poolExists() then return fail('NOPOOL') end

local old = getScale(id)
if not old and redis.call('HLEN', K.scales) >= tonumber(ARGV[9]) then return fail('FULL', ARGV[9]) end
local c
if old then
  c = copyScale(old)
else
  -- up, its lease starting now (dispatch.Register)
  c = {w = 1, st = 'a', max = 0, out = 0, base = 0, since = '', avg = '', h = 'u', hb = fmt(now),
    eu = '', ej = 0, f = 0, fs = '', lf = ''}
end
if ARGV[5] ~= '' then c.w = tonumber(ARGV[5]) end
if ARGV[7] ~= '' then c.max = tonumber(ARGV[7]) end
if ARGV[6] ~= '' then c.st = ARGV[6] end
if ARGV[8] ~= '' then c.base = math.max(0, tonumber(ARGV[8]) - c.out) end
-- Active since now when registered active or when it becomes active.
if c.st == 'a' and (not old or old.st ~= 'a') then c.since = fmt(now) end

saveScale(id, old, c)
if not old then ringTrack(id, true) end
flushAgg()
local created = old and 0 or 1
local prior = callGet(tok)
if prior then created = tonumber(prior) else callPut(tok, fmt(created)) end
sweep(now, ret)
return {created, scaleView(c)}
