-- finish.lua: complete or cancel orders, all or none.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (FINISH): mode ('c' complete, 'x' cancel), now ms, retention
--   ms, the call's token, then from orders pairs: order id, durationMs (0:
--   none; ignored by cancel).
-- Reply: {changed, record...}: how many orders were assigned before, then
--   each order after the call as records.lua's orderView shows it, in request
--   order. A completed order
--   stays completed and a cancelled one cancelled. Errors: DISPATCH NOPOOL,
--   NOORDER, STATE.

function ENTRY.finish(A)
  local P = FINISH
  local mode, now, ret, tok = A[P.mode], tonumber(A[P.now]), tonumber(A[P.retention]), A[P.token]
  -- order i's id and durationMs
  local function oid(i) return A[P.orders + 2 * (i - 1)] end
  local function dur(i) return tonumber(A[P.orders + 2 * i - 1]) end
  local n = (#A - P.orders + 1) / 2
  if not poolExists() then return fail('NOPOOL') end

  local orders = {}
  for i = 1, n do
    local id = oid(i)
    local o = getOrder(id)
    if not o or not live(o, now, ret) then return fail('NOORDER', id) end
    if mode == 'c' and o.st == 'x' then return fail('STATE', id .. ' cancelled') end
    if mode == 'x' and o.st == 'c' then return fail('STATE', id .. ' completed') end
    orders[i] = o
  end

  local orig, cur, touched = {}, {}, {}
  local changed = 0
  for i = 1, n do
    local o = orders[i]
    if o.st == 'a' then
      local id = oid(i)
      local c = cur[o.comp]
      if not c and orig[o.comp] == nil then
        orig[o.comp] = getScale(o.comp) or false
        if orig[o.comp] then
          c = copyScale(orig[o.comp])
          cur[o.comp] = c
          touched[#touched + 1] = o.comp
        end
      end
      release(id, o, c, mode, now, ret)
      local d = dur(i)
      if c and mode == 'c' and d > 0 then
        -- The response-time average for weighted-response-time, as
        -- balancing.EWMA computes it, kept with all 17 digits.
        local avg = d
        if c.avg ~= '' then
          local a = tonumber(c.avg)
          avg = a + 0.2 * (d - a)
        end
        c.avg = string.format('%.17g', avg)
      end
      changed = changed + 1
    end
  end
  for _, comp in ipairs(touched) do saveScale(comp, orig[comp], cur[comp]) end
  flushAgg()
  -- changed counts the orders this run finished: none on a re-send.
  if mode == 'c' then countUp('completed', changed) else countUp('cancelled', changed) end

  local prior = callGet(tok)
  if prior then changed = tonumber(prior) else callPut(tok, fmt(changed)) end
  sweepFor(now, ret, changed)

  local out = {changed}
  for i = 1, n do out[i + 1] = orderView(orders[i]) end
  return out
end
