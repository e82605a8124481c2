-- The state of one level at now, for monitoring (InMemoryStore.snapshot). Runs after lib.lua,
-- which reads ARGV 1-3. Brings the level to now and keeps that, as the in-memory store does.
--
-- KEYS: the level's four keys (see lib.lua)
-- ARGV: 4-10 the level (see lib.lua)
-- Returns {} when the level is untracked or fresh (BudgetTable.isFresh: no admission in either
-- window, a full bucket), else {windowUsed, tokens, nextFreeMs, modelTokensUsed} as strings.

local L = load(KEYS, 3, true)
save(L)
if not L.exists or (L.size == 0 and L.tpmSize == 0
    and (not L.hasBucket or L.tokens >= L.capacity - EPSILON)) then
  return {}
end
-- milliseconds until a unit-cost call would pass the window and the bucket (BudgetTable.waitMs)
local ms = 0
if windowFull(L) then
  ms = ceilMs(oldestOf(L) + L.window - now)
end
if bucketShort(L, 1.0) and L.refill > 0 then
  ms = math.max(ms, tokensMs(L, 1.0 - L.tokens))
end
return {num(L.size), num(L.tokens), num(ms), num(math.max(0, L.tpmSum))}
