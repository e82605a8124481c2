-- Takes a waiting call out of its upstream's order without admitting it (lib.lua's OR.remove):
-- it timed out, its caller left, or its own budgets denied it; nothing happens for a call no
-- longer in it. Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: the upstream's order key (RedisKeys.order)
-- ARGV[1]: the three numbers of lib.lua; ARGV[2]: the call's id
-- Returns 1 if the call was in the order (0: it was not).

local O = orders().open(KEYS[1], '', '0', 1, 0, ARGV[2])
OR.purge(O)
return OR.remove(O, ARGV[2]) and 1 or 0
