-- Replaces a reservation's estimate with the actual model tokens at every level that limits them
-- (InMemoryStore.reconcile, BudgetTable.reconcileModelTokens). Runs after lib.lua, which reads
-- ARGV 1-3. Touches only the model-token windows.
--
-- KEYS: per level, as for acquire.lua (without the counter)
-- ARGV: 4 N, 5 the reservation id, 6 its estimate, 7 the actual model tokens,
--       then 7 values per level (see lib.lua)
-- Returns {}.

local n = tonumber(ARGV[4])
local id = ARGV[5]
local estimate = tonumber(ARGV[6])
local actual = tonumber(ARGV[7])

local k = 1
for i = 1, n do
  local b = 7 + (i - 1) * 7
  if tonumber(ARGV[b + 6]) > 0 then
    local L = {mkey = KEYS[k + 1], akey = KEYS[k + 2], tpmLimit = tonumber(ARGV[b + 6])}
    k = k + 3
    modelTokens().load(L, b)
    local held = redis.call('HGET', L.akey, id)
    if held and redis.call('ZSCORE', L.mkey, id) then
      -- the reservation's entry is still in the window: it takes the actual amount
      L.tpmSum = L.tpmSum + actual - tonumber(held)
      redis.call('HSET', L.akey, id, string.format('%.17g', actual))
      L.tpmDirty = true
    elseif actual > estimate then
      -- it has left: only an under-estimate is charged, as a new entry now
      T.append(L, id, actual - estimate)
    end
    T.save(L)
  else
    k = k + 1
  end
end
return {}
