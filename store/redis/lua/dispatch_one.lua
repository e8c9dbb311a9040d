-- dispatch_one.lua: one batch (dispatch.lua); ARGV are its arguments.
return dispatchBatch(ARGV, 0)
