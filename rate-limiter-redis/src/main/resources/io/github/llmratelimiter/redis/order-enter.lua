-- Puts a call in the fair order of its upstream's waiting calls (lib.lua's OR.enter): lifts its
-- tenant when it becomes backlogged in the call's class, appends the call to the tenant's calls
-- there, and publishes on the waiting channel when the order was empty or the call waits past the
-- horizon last published. Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: the upstream's order key (RedisKeys.order), the first of the order's keys
-- ARGV[1] after the three of lib.lua: the call's priority class, its tenant's weight, its
--   estimated model tokens, how long it waits at most in time units, how long its keys live in ms
-- ARGV[2]: the tenant (a hash); ARGV[3]: the call's id, unique among the store's callers
-- Returns {the number of calls waiting, 1 if the call is first (0: not)}.

local class, weight, estimate, maxWait, ttlMs = struct.unpack('<ddddd', ARGV[1], 25)
local O = orders().open(KEYS[1], ARGV[2], string.format('%d', class), weight, estimate, ARGV[3])
local n = OR.enter(O, maxWait, ttlMs)
return {n, OR.first(O) == ARGV[3] and 1 or 0}
