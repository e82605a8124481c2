-- The state of one level at now, for monitoring (InMemoryStore.snapshot). Runs after lib.lua,
-- which reads ARGV 1-3. Brings the level to now and keeps that, as the in-memory store does.
--
-- KEYS: the level's state key, then its model-token window and amounts when it limits model
--   tokens (see lib.lua)
-- ARGV: 4-10 the level (see lib.lua)
-- Returns {} when the level is untracked or fresh (BudgetTable.isFresh: no admission in either
-- window, a full bucket), else {windowUsed, tokens, nextFreeMs, modelTokensUsed} as strings.

local L = {key = KEYS[1]}
load(L, 3, true)
if L.hasTpm then
  L.mkey, L.akey = KEYS[2], KEYS[3]
  modelTokens().load(L, 3)
  T.save(L)
end
save(L)
if L.size == 0 and L.tpmSize == 0 and (not L.hasBucket or L.tokens >= L.capacity - EPSILON) then
  return {}
end
-- milliseconds until a unit-cost call would pass the window and the bucket (BudgetTable.waitMs)
local ms = 0
if L.hasWindow and L.size >= L.limit then
  ms = ceilMs(oldest(L) + L.window - now)
end
if L.hasBucket and L.tokens < 1.0 - EPSILON and L.refill > 0 then
  ms = math.max(ms, tokensMs(L.refill, 1.0 - L.tokens))
end
local f = '%.17g'
return {string.format(f, L.size), string.format(f, L.hasBucket and L.tokens or 0),
  string.format(f, ms), string.format(f, math.max(0, L.tpmSum))}
