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
--   settle, and per counter its index in KEYS, the amount to add to what was used (actual -
--   estimate), the estimate's part in flight (no longer: taken from p; 0 for requests) and its
--   time to live in ms should it be created: a counter is created only for a positive amount to
--   add; neither u nor p ever goes below 0 (QuotaBook.Counter.settle; refund.lua takes back a
--   charge the same way); then, optionally, 1 when each counter's spenders set (Monitoring.java)
--   follows the counters in KEYS, in the same order: a counter still in its set is rescored with
--   what it used after the settlement
-- ARGV[1 + i]: level i (see lib.lua)
-- Returns {}.

local n, id, estimate, actual, quotas = struct.unpack('<ddddd', ARGV[1], 25)
local ranked = #ARGV[1] > (8 + 4 * quotas) * 8
  and struct.unpack('<d', ARGV[1], 1 + (8 + 4 * quotas) * 8) == 1

if n > 0 then
  modelTokens().eachLevel(n, function(L)
    T.settle(L, id, estimate, actual)
  end)
end
for j = 1, quotas do
  local key, delta, inflight, ttl = struct.unpack('<dddd', ARGV[1], 65 + (j - 1) * 32)
  key = KEYS[key]
  local r = redis.call('HMGET', key, 'u', 'p')
  local used, pending = tonumber(r[1]), tonumber(r[2])
  if used then
    if delta ~= 0 then
      redis.call('HSET', key, 'u', string.format('%.0f', math.max(0, used + delta)))
      if ranked then
        redis.call('ZADD', KEYS[#KEYS - quotas + j], 'XX', math.max(0, used + delta), key)
      end
    end
    if pending and inflight > 0 then
      redis.call('HSET', key, 'p', string.format('%.0f', math.max(0, pending - inflight)))
    end
  elseif delta > 0 then -- a counter gone (reset or expired): created with what was used
    redis.call('HSET', key, 'u', string.format('%.0f', delta))
    redis.call('PEXPIRE', key, string.format('%.0f', ttl))
  end
end
return {}
