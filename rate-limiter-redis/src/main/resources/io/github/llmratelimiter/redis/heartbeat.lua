-- Marks this gateway instance live and counts the live ones: the instances sharing a key prefix
-- each call it periodically, and an instance whose last call is older than the TTL no longer
-- counts. Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS[1]: the sorted set of live instances (member: instance id, score: time of its last call)
-- ARGV[1] after the three of lib.lua: this instance's id (a whole number below 2^53), the TTL in
--   milliseconds
-- Returns {the number of live instances, this one included; the script's time}.

local id, ttlMs = struct.unpack('<dd', ARGV[1], 25)
redis.call('ZADD', KEYS[1], now, string.format('%.0f', id))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%.17g', now - ttlMs * unitsPerMs))
redis.call('PEXPIRE', KEYS[1], math.max(math.ceil(ttlMs), minTtlMs))
return {redis.call('ZCARD', KEYS[1]), string.format('%.0f', now)}
