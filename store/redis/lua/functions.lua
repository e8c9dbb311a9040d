-- functions.lua: how the library registers its functions, the last of its
-- files. functions.go lists the functions and adds a register call for
-- each after this file. Loading the library runs its top level once, so a
-- call does not pay for the definitions as an EVAL script does on every
-- run; VERSION (functions.go) is a hash of the library, so that versions
-- live side by side.
--
-- Each function takes the pool's keys (lib.lua, bound by enter) and the
-- arguments of the Lua function it calls, which its file describes.

-- register registers fn under name and the version, with the Redis
-- function flags given (no-writes for a read, which FCALL_RO runs).
local function register(name, fn, flags)
  redis.register_function{function_name = name .. '_' .. VERSION, flags = flags,
    callback = function(keys, args)
      enter(keys)
      return fn(args)
    end}
end
