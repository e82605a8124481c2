-- Applies what a provider reported about an upstream (ProviderReport.java) to the upstream's
-- report, which acquire.lua reads when it decides the upstream (see acquire.lua's UPSTREAM). Runs
-- after lib.lua, which reads the first three numbers of ARGV[1]; times are the store's (the
-- server's TIME, or the ticker's), so every instance reads the report against the same clock.
--
-- KEYS[1]: the upstream's report, a hash under the upstream's hash tag: lr and lt the provider's
--   limits of requests and model tokens when lower than the configured ones, rr and tr the
--   requests and model tokens left (counted down by acquire.lua) until ra and ta, cu the time the
--   upstream is closed until, pn set when the next call admitted is a probe (a report closed the
--   upstream or left a count at 0), pu the time a probe in flight goes alone until, ps set when
--   that probe is one of silence, hr the later of the last report's time and the last probe of
--   silence's start (times in the scripts' time units; every report clears pu and ps and sets hr:
--   UpstreamState.apply)
-- ARGV[1] after the three of lib.lua, NaN for what the report does not say: the lower limit of
--   requests (-1: the report states one not lower than the configured one, which clears lr), the
--   lower limit of model tokens (likewise for lt), the requests left, the time units until they no
--   longer hold, the model tokens left, the time units until they no longer hold, the time units
--   the upstream is closed for (a provider's retry: the later of this and a closing already held)
-- The report lives a day after its last write; one that holds a lower limit stays until a report
-- states another limit.
-- Returns {}.

local lr, lt, rr, ra, tr, ta, cu = struct.unpack('<ddddddd', ARGV[1], 25)
local key = KEYS[1]
redis.call('HDEL', key, 'pu', 'ps') -- an answer came: what it says decides from now on
redis.call('HSET', key, 'hr', string.format('%.17g', now))

-- a limit field set to a lower limit, or cleared
local function limit(field, value)
  if value ~= value then
    return
  end
  if value < 0 then
    redis.call('HDEL', key, field)
  else
    redis.call('HSET', key, field, string.format('%d', value))
  end
end

limit('lr', lr)
limit('lt', lt)
if rr == rr then
  redis.call('HSET', key, 'rr', string.format('%d', rr), 'ra', string.format('%.17g', now + ra))
end
if tr == tr then
  redis.call('HSET', key, 'tr', string.format('%d', tr), 'ta', string.format('%.17g', now + ta))
end
if cu == cu then
  local held = tonumber(redis.call('HGET', key, 'cu'))
  if not held or now + cu > held then
    redis.call('HSET', key, 'cu', string.format('%.17g', now + cu))
  end
end
if (rr == rr and ra > 0 and rr <= 0) or (tr == tr and ta > 0 and tr <= 0) or (cu == cu and cu > 0) then
  redis.call('HSET', key, 'pn', '1')
end

-- The report lives a day after its last write (what it holds is bounded by its own times; its
-- time hr makes a silence found), or for as long as it holds a lower limit.
local r = redis.call('HMGET', key, 'lr', 'lt')
if r[1] or r[2] then
  redis.call('PERSIST', key)
else
  redis.call('PEXPIRE', key, string.format('%d', math.max(86400000, minTtlMs)))
end
return {}
