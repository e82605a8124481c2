-- Charges model tokens used outside a decided call, after the fact (InMemoryStore.chargeModelTokens,
-- BudgetTable.chargeModelTokens): at every level that limits model tokens, one new entry of that
-- many tokens at the current time, numbered by the root's reservation counter. Nothing else is
-- charged (no window slot, no bucket permit, no slot) and nothing is denied. Runs after lib.lua,
-- which reads the first three numbers of ARGV[1].
--
-- KEYS: per level, as for acquire.lua, all sharing one hash tag; last, the counter that numbers the
--   root's reservations
-- ARGV[1] after the three of lib.lua: N, the first reservation id of this store, the model tokens
-- ARGV[1 + i]: level i (see lib.lua)
-- Returns {the id of the entries}.

local n, idBase, amount = struct.unpack('<ddd', ARGV[1], 25)

local id = idBase + nextId(KEYS[#KEYS])
modelTokens().eachLevel(n, function(L)
  T.append(L, id, amount)
end)
return {id}
