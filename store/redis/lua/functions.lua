-- functions.lua: how the library registers its functions, the last of its
-- files. functions.go lists the functions and adds a register call for
-- each after this file. Loading the library runs its top level once, so a
-- call does not pay for the definitions as an EVAL script does on every
-- run; VERSION (functions.go) is a hash of the library, so that versions
-- live side by side.
--
-- Each function takes the keys of the pool that functions.go declares for
-- it (bound to K by the preamble's BIND[name]) and the arguments of the Lua
-- function it calls, which its file describes.

-- register registers fn under name and the version, with the Redis
-- function flags given (no-writes for a read, which FCALL_RO runs).
local function register(name, fn, flags)
  local bind = BIND[name]
  redis.register_function{function_name = name .. '_' .. VERSION, flags = flags,
    callback = function(keys, args)
      bind(keys)
      enter()
      return fn(args)
    end}
end
