-- The first call of an upstream's order (lib.lua's OR.first), after taking out the calls whose
-- deadline passed. Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: the upstream's order key (RedisKeys.order)
-- ARGV[1]: the three numbers of lib.lua
-- Returns the first waiting call's id, or '' when none waits.

local O = orders().open(KEYS[1], '', '0', 1, 0, nil)
return OR.first(O) or ''
