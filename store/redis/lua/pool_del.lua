-- pool_del.lua: remove a pool and all its state.
--
-- Keys: the pool's keys (lib.lua).
-- Arguments (POOL_DEL): the call's token.
-- Reply: 1. Errors: DISPATCH NOPOOL.
--
-- UNLINK frees the values in a background thread, so a pool of millions of
-- orders leaves without blocking Redis. The token stays in gone for a
-- minute, so that a call go-redis re-sends after a lost reply succeeds
-- instead of finding no pool.

function ENTRY.poolDel(A)
  local tok = A[POOL_DEL.token]
  if not poolExists() then
    if tok ~= '' and redis.call('GET', K.gone) == tok then return 1 end
    return fail('NOPOOL')
  end
  redis.call('UNLINK', K.meta, K.scales, K.load, K.elig, K.orders,
    K.oexp, K.bexp, K.iexp, K.strat, K.tmp, K.lex, K.ring, K.lease, K.lapsed,
    K.ejq, K.lapq, K.journal)
  if tok ~= '' then redis.call('SET', K.gone, tok, 'PX', 60000) end
  return 1
end
