-- scale_orders.lua: one page of a Scale's outstanding orders, oldest first;
-- changes nothing.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (SCALE_ORDERS): compId, limit, the cursor's chunk
--   (hexadecimal, '' for the first page), moves and after: its order id (the
--   last order of the previous page) and how often that order had moved,
--   and the anchors prev, next, far and own (below; '' for none).
-- Reply: {more (1/0), next chunk (hexadecimal), prev, next, far, own, id,
--   view, id, view, ...}, each view as orderView shows it, and the anchors
--   of the last order's entry when there is more. A cursor order that has left
--   its chunk since, or moved at all (away and back into the same chunk,
--   where it is an id at the end), resumes after its place in its batch's
--   token, if that is still there, else at the entry that came after its
--   entry (next), else past the one that came before it (prev), else past
--   the nearest one before it of another batch (far), else (none of them
--   is there any more, or the cursor was made before the anchors) at the
--   chunk's start. Errors: DISPATCH NOPOOL, NOSCALE.
--
-- An anchor names an entry of the own index (own.lua) so that the entry can
-- be found again: 't' and the ref of a token (a batch's refs are never
-- used again), 'i', the moves, the order's self (selfOf, below) and '.'
-- and the id of an order's own id (an id that left and came back is at
-- its chunk's end, with more moves, or another self: the anchor then no
-- longer holds), '-' none (the order's entry was the first,
-- or the last, of its chunk; the last only of a sealed chunk, which takes
-- no more entries), '' unknown; own is '', a token's or a self (below).
-- Entries keep
-- their order in a chunk, and new ones join only at the tail's end: next
-- and what follows it in the chunk came after the cursor's order, and
-- what follows prev or far, the order's entry gone, too. A page lists orders again only when the
-- cursor's order's entry and its anchors have all left between two pages,
-- or the anchors are unknown: the orders of one chunk at most.

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
  -- The cursor's anchor own names which order of that id it was: 't'
  -- and the ref of the token it was listed through, or when it was listed
  -- by its own id its self (selfOf: 'r' and its batch's ref, or 'a' and
  -- its batch's time for a batch of one; '' for a cursor made before the
  -- anchors). A record of that id that is another self is another order
  -- (ids are free again once their order has left), and the token is
  -- found through its ref even once the order's record has left.
  local function selfOf(o)
    if o.ref ~= '' then return 'r' .. o.ref end
    local at = o.ath or o.at
    return at and at ~= '' and 'a' .. at or ''
  end
  local co, cx, cref = nil, nil, nil
  local own = A[P.own] or ''
  local oref = string.match(own, '^t(%x+)$')
  local function same(o)
    if own == '' then return true end
    if oref then return o.ref == oref end
    return selfOf(o) == own
  end
  if skip then
    co = getOrder(skip)
    if co and co.st == 'a' and co.comp == comp and co.mv == cmv and same(co) then cx, cref = ownAt(co) end
  end
  -- anchor reads an anchor: the entry it names as each finds it ("~ref."
  -- or an id), or nil when it names none that still holds; and whether it
  -- says the order's entry ended its sealed chunk.
  local function anchor(a)
    local kind = string.sub(a, 1, 1)
    if kind == 't' then return '~' .. string.sub(a, 2) .. '.' end
    if kind ~= 'i' then return nil, a == '-' end
    local mv, self, id = string.match(a, '^i(%d+)([ra]%x+)%.(.+)$')
    if not mv then mv, id = string.match(a, '^i(%d+)%.(.+)$') end
    local o = id and getOrder(id)
    if o and o.st == 'a' and o.comp == comp and o.mv == tonumber(mv) and not select(2, ownAt(o))
      and (not self or selfOf(o) == self) then
      return id
    end
  end
  local out, got, more, last, first = {}, 0, 0, '', true
  -- (the records read of orders that may be the anchors' ids: the
  -- cursor's, and the ones this page reached)
  local lastRec, lastList, seen = nil, nil, {}
  if co then seen[skip] = co end
  -- (a chunk's orders, a token's too, as own.lua's ownChunks reads them)
  local ct = ownChunks(comp, from, function(chunk, each, list, tail)
    local skipping = skip and first
    first = false
    local function take(oid, o)
      if skipping then
        skipping = oid ~= skip
        return false
      end
      seen[oid] = o
      if got == limit then more = 1; return true end
      got = got + 1
      out[#out + 1] = oid
      out[#out + 1] = orderView(o)
      last, lastRec, lastList = hex(chunk), o, list
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
      local done = each(take, nil, skip, true)
      if done ~= false then return done end
      skipping = true
    end
    if skipping then
      -- The cursor's order has left the chunk. If its batch's token is
      -- still there, the page goes on after the order's place in it (its
      -- record stays while its window lasts, and with it its ref), else
      -- at the entry after its entry, or past the one before it, or past
      -- the nearest one of another batch before it (the cursor's anchors:
      -- entries keep their order in a chunk, and new ones join only at the
      -- tail's end), else from the chunk's start: a
      -- chunk holds fewer than OWN / 5 tokens of fewer than OWNK orders
      -- each and one batch's (own.lua), a chunk of ids OWN bytes of them.
      -- A chunk after the cursor's (it emptied) holds only later orders.
      skipping = false
      local ref = oref
      if not ref and co and co.ref ~= '' and same(co) then ref = co.ref end
      if ref then
        local done = each(take, ref, skip)
        if done ~= false then return done end
      end
      if chunk == from then
        local ne, sealedEnd = anchor(A[P.next])
        local done = ne and each(take, nil, ne)
        if ne and done ~= false then return done end
        for _, a in ipairs({A[P.prev], A[P.far]}) do
          local pe = anchor(a)
          done = pe and each(take, nil, pe, true)
          if pe and done ~= false then return done end
        end
        -- (a tail that takes this chunk's number was made since: the
        -- index emptied)
        if sealedEnd and not tail then return false end
      end
      return each(take)
    end
    return each(take)
  end)
  -- The anchors of the last order's entry, for the next page's cursor:
  -- the token it is in (own), the entries before and after it in its
  -- chunk, and of an id of a batch
  -- (named by a UUID: an id per order, which may leave with its batch,
  -- and the order's neighbours with it) the nearest entry before it of
  -- another batch, among the OWNFAR (16) before it, '' when that is the
  -- one before it.
  local an = {'', '', '', ''}
  if more == 1 then
    local OWNFAR = 16
    local _, r = ownAt(lastRec)
    if r then
      an[4] = 't' .. r
    else
      an[4] = selfOf(lastRec)
    end
    local e = r and '~' .. r .. '.' or out[#out - 1]
    local s = ',' .. lastList
    local p = string.find(s, ',' .. e .. (r and '' or ','), 1, true)
    if p then
      local q = r and string.find(s, ',', p + 1, true) or p + #e + 1
      local ne = string.match(s, '^([^,]+),', q + 1)
      local before = {}
      for b in string.gmatch(string.sub(s, 2, p), '([^,]+),') do before[#before + 1] = b end
      local low = math.max(1, #before - OWNFAR + 1)
      if r or lastRec.ref == '' then low = #before end
      -- (one read for the records of the ids among them that this page
      -- has not read)
      local ids = {}
      for _, x in ipairs({ne or '~', unpack(before, math.max(low, 1))}) do
        if string.byte(x, 1) ~= 126 and not seen[x] then ids[#ids + 1] = x end
      end
      local vs = hmgetList(K.orders, ids)
      for i = 1, #ids do seen[ids[i]] = decOrder(vs[i], ids[i]) end
      local function here(x)
        local o = seen[x]
        return o and o.st == 'a' and o.comp == comp and o
      end
      local function enc(x)
        if string.byte(x, 1) == 126 then return 't' .. string.match(x, '^~(%x+)%.') end
        local o = here(x)
        return o and 'i' .. fmt(o.mv) .. selfOf(o) .. '.' .. x or ''
      end
      local pe = before[#before]
      an[1] = pe and enc(pe) or '-'
      if ne then
        an[2] = enc(ne)
      elseif tonumber(last, 16) < ct then
        an[2] = '-'
      end
      local po = pe and here(pe)
      if not r and lastRec.ref ~= '' and po and po.ref == lastRec.ref then
        for i = #before - 1, low, -1 do
          local b = before[i]
          local o = here(b)
          if string.byte(b, 1) == 126 or o and o.ref ~= lastRec.ref then
            an[3] = enc(b)
            break
          end
        end
      end
    end
  end
  for i = 4, 1, -1 do table.insert(out, 1, an[i]) end
  table.insert(out, 1, last)
  table.insert(out, 1, more)
  return out
end
