-- Replaces a reservation's estimate with the actual model tokens at every level that limits them
-- (InMemoryStore.reconcile, BudgetTable.reconcileModelTokens), and moves its quotas from the
-- estimate to the actual amounts in the period it was charged in (InMemoryStore.settleQuotas).
-- Runs after lib.lua, which reads the first three numbers of ARGV[1]. Touches only the model-token
-- windows and the quota counters (not the slots: release.lua gives those back).
--
-- KEYS: per level, as for acquire.lua (without the counter; none when N is 0), then the quota
--   counters to settle
-- ARGV[1] after the three of lib.lua: N, the reservation id, its estimate, the actual model tokens
--   (N is 0 when no level's model tokens are settled); then the number of quota counters to
--   settle, and per counter its index in KEYS, the amount to add (actual - estimate, not 0) and
--   its time to live in ms should it be created: a counter is created only for a positive amount,
--   and never goes below 0 (see quota-settle in refund.lua, which does the same)
-- ARGV[1 + i]: level i (see lib.lua)
-- Returns {}.

local n, id, estimate, actual, quotas = struct.unpack('<ddddd', ARGV[1], 25)

if n > 0 then
  modelTokens().eachLevel(n, function(L)
    T.settle(L, id, estimate, actual)
  end)
end
for j = 1, quotas do
  local key, delta, ttl = struct.unpack('<ddd', ARGV[1], 65 + (j - 1) * 24)
  key = KEYS[key]
  if delta > 0 then
    if redis.call('HINCRBY', key, 'u', string.format('%.0f', delta)) == delta then
      redis.call('PEXPIRE', key, string.format('%.0f', ttl)) -- a new counter
    end
  else
    local used = tonumber(redis.call('HGET', key, 'u'))
    if used then
      redis.call('HSET', key, 'u', string.format('%.0f', math.max(0, used + delta)))
    end
  end
end
return {}
