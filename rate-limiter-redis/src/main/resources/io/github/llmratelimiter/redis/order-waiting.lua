-- The number of calls waiting in an upstream's order whose deadline has not passed (lib.lua's
-- OR.waiting). Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: the upstream's order key (RedisKeys.order)
-- ARGV[1]: the three numbers of lib.lua
-- Returns the number.

local O = orders().open(KEYS[1], '', '0', 1, 0, nil)
return OR.waiting(O)
