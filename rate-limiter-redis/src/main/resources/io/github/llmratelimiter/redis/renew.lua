-- Renews the slots one gateway instance holds for its calls still in flight, on any number of
-- slots keys at once: each listed slot that still counts expires anew slotLease after now, never
-- after its cap (see lib.lua, c). Runs after lib.lua, which reads the first three numbers of
-- ARGV[1]. A slot that has expired (its holder stopped renewing it in time, or Redis was out of
-- reach for longer than the slot lease) or was released is not there, and is not taken again.
--
-- KEYS: slots keys (see lib.lua); on a Redis Cluster, all in one hash slot
-- ARGV[1] after the three of lib.lua: the slot lease in time units; then, for each key in KEYS
--   order, the number of its slots to renew and their reservation ids
-- Returns {the number of slots renewed}.

local slotLease = struct.unpack('<d', ARGV[1], 25)
local at = 33
local renewed = 0
for i = 1, #KEYS do
  local key = KEYS[i]
  local count
  count, at = struct.unpack('<d', ARGV[1], at)
  local wanted = {}
  for _ = 1, count do
    local id
    id, at = struct.unpack('<d', ARGV[1], at)
    wanted[string.format('%.17g', id)] = true
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  local last = now
  for j = 1, #all, 2 do
    local member, score = all[j], tonumber(all[j + 1])
    local id, cap = string.match(member, '^(%S+) (%S+)$')
    if id and wanted[id] then
      local expiry = math.min(now + slotLease, tonumber(cap))
      if expiry > score then
        redis.call('ZADD', key, 'XX', expiry, member)
        score = expiry
      end
      renewed = renewed + 1
    end
    if score > last then
      last = score
    end
  end
  if #all > 0 then
    redis.call('PEXPIRE', key, math.max(ceilMs(last - now) + 1, minTtlMs))
  end
end
return {renewed}
