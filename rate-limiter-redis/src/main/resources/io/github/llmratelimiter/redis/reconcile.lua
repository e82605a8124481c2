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

modelTokens().eachLevel(n, function(L)
  T.settle(L, id, estimate, actual)
end)
return {}
