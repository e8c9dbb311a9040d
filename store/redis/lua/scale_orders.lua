-- scale_orders.lua: one page of a Scale's outstanding orders, oldest first;
-- changes nothing.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (SCALE_ORDERS): compId, limit, the cursor's chunk
--   (hexadecimal, '' for the first page), moves and after: its order id (the
--   last order of the previous page) and how often that order had moved.
-- Reply: {more (1/0), next chunk (hexadecimal), id, view, id, view, ...}, each
--   view as orderView shows it. A cursor order that has left its chunk
--   since, or moved at all (away and back into the same chunk, where it is
--   an id at the end), resumes after its place in its batch's token, if
--   that is still there, else at the chunk's start. Errors: DISPATCH NOPOOL, NOSCALE.

function ENTRY.scaleOrders(A)
  local P = SCALE_ORDERS
  local comp, limit, cchunk, cid = A[P.compId], tonumber(A[P.limit]), A[P.chunk], A[P.after]
  local cmv = tonumber(A[P.moves]) or 0
  if not poolExists() then return fail('NOPOOL') end
  if redis.call('HEXISTS', K.scales, comp) == 0 then return fail('NOSCALE', comp) end

  local from, skip = nil, nil
  if cchunk ~= '' then from, skip = tonumber(cchunk, 16), cid end
  -- Where the cursor's order is (own.lua's ownAt): a page goes on from
  -- its entry, not from its chunk's start, when it is still in its
  -- batch's token there (reading the token's earlier entries again would
  -- read their batches' assignments, some 22 bytes per order of each
  -- batch, for orders that it skips), and goes straight to its fallback
  -- when the order has left the chunk. An order that moved since the
  -- page was listed has left its place, even if it came back to this
  -- chunk: going on from its new place would skip the entries between.
  local co, cx, cref = nil, nil, nil
  if skip then
    co = getOrder(skip)
    if co and co.st == 'a' and co.comp == comp and co.mv == cmv then cx, cref = ownAt(co) end
  end
  local out, got, more, last, first = {}, 0, 0, '', true
  -- (a chunk's orders, a token's too, as own.lua's ownChunks reads them)
  ownChunks(comp, from, function(chunk, each)
    local skipping = skip and first
    first = false
    local function take(oid, o)
      if skipping then
        skipping = oid ~= skip
        return false
      end
      if got == limit then more = 1; return true end
      got = got + 1
      out[#out + 1] = oid
      out[#out + 1] = orderView(o)
      last = hex(chunk)
    end
    if skipping and cx == chunk and cref then
      -- in its token: the orders after it there, then the entries after it
      skipping = false
      local done = each(take, cref, skip)
      if done ~= false then return done end
      skipping = true
    end
    if skipping and cx == chunk then
      -- its own id there: the entries after it, unread before it
      skipping = false
      local done = each(take, '', skip)
      if done ~= false then return done end
      skipping = true
    end
    if skipping then
      -- The cursor's order has left the chunk. If its batch's token is
      -- still there, the page goes on after the order's place in it (its
      -- record stays while its window lasts, and with it its ref), else
      -- from the chunk's start: a chunk holds fewer than OWN / 5 tokens
      -- of fewer than OWNK orders each and one batch's (own.lua), a chunk
      -- of ids OWN bytes of them.
      skipping = false
      if co and co.ref ~= '' then
        local done = each(take, co.ref, skip)
        if done ~= false then return done end
      end
      return each(take)
    end
    return each(take)
  end)
  table.insert(out, 1, last)
  table.insert(out, 1, more)
  return out
end
