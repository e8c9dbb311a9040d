-- functions.lua: the functions of the dispatch library, the last of its
-- files (functions.go). Loading the library runs its top level once, so a
-- call does not pay for its definitions as a script does on every run; @V
-- is a hash of the library, so that versions live side by side.
-- Each function takes the pool's keys (lib.lua) and the arguments of the
-- file it names.

redis.register_function('dispatch_@V', function(keys, args)
  enter(keys)
  return dispatchBatch(args, 0)
end)

redis.register_function('dispatch_many_@V', function(keys, args)
  enter(keys)
  return dispatchMany(args)
end)
