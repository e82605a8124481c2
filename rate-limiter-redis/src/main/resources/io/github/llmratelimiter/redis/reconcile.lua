-- Replaces a reservation's estimate with the actual model tokens at every level that limits them
-- (InMemoryStore.reconcile, BudgetTable.reconcileModelTokens). Runs after lib.lua, which reads
-- the first three numbers of ARGV[1]. Touches only the model-token windows (not the slots:
-- release.lua gives those back).
--
-- KEYS: per level, as for acquire.lua (without the counter)
-- ARGV[1] after the three of lib.lua: N, the reservation id, its estimate, the actual model tokens
-- ARGV[1 + i]: level i (see lib.lua)
-- Returns {}.

local n, id, estimate, actual = struct.unpack('<dddd', ARGV[1], 25)

local k = 1
for i = 1, n do
  local tpmLimit, tpmWindow, slotLimit = select(6, struct.unpack(LEVEL, ARGV[1 + i]))
  if tpmLimit > 0 then
    local L = {mkey = KEYS[k + 1], akey = KEYS[k + 2], tpmLimit = tpmLimit, tpmWindow = tpmWindow}
    k = k + 3
    modelTokens().load(L)
    T.settle(L, id, estimate, actual)
    T.save(L)
  else
    k = k + 1
  end
  if slotLimit > 0 then
    k = k + 1
  end
end
return {}
