-- Corrects a tenant's counter in an upstream's order with what one of its admitted calls used
-- (lib.lua's OR.settle): adds (used - estimate) / weight, unless the order forgot the tenant.
-- Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: the upstream's order key (RedisKeys.order)
-- ARGV[1] after the three of lib.lua: the correction, (used - estimate) / weight
-- ARGV[2]: the tenant (a hash)
-- Returns 1 if the tenant's counter was corrected (0: the order keeps none).

local delta = struct.unpack('<d', ARGV[1], 25)
local O = orders().open(KEYS[1], ARGV[2], '0', 1, 0, nil)
local known = redis.call('HEXISTS', KEYS[1] .. ':c', ARGV[2])
OR.settle(O, delta)
return known
