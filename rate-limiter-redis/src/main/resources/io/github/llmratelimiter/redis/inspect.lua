-- The state of one level at now, for monitoring (InMemoryStore.snapshot). Runs after lib.lua,
-- which reads ARGV 1-3. Brings the level to now and keeps that, as the in-memory store does.
--
-- KEYS: the level's state key, then its model-token window and amounts when it limits model
--   tokens (see lib.lua)
-- ARGV: 4-10 the level (see lib.lua)
-- Returns {} when the level is untracked or fresh (BudgetTable.isFresh: no admission in either
-- window, a full bucket), else {windowUsed, tokens, nextFreeMs, modelTokensUsed} as strings.

local limit, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local capacity, refill = tonumber(ARGV[6]), tonumber(ARGV[7])
local s, width, base, first, size, newest, tokens, at, dirty =
  load(KEYS[1], limit, window, capacity, tonumber(ARGV[8]))
commit(KEYS[1], s, width, base, first, size, newest, tokens, at, dirty, limit, window, capacity,
  refill, false, 0)
local used = 0
if tonumber(ARGV[9]) > 0 then
  local L = {mkey = KEYS[2], akey = KEYS[3], tpmLimit = tonumber(ARGV[9])}
  modelTokens().load(L, 3)
  T.save(L)
  used = math.max(0, L.tpmSum)
  if L.tpmSize == 0 and size == 0 and tokens >= capacity - EPSILON then
    return {}
  end
elseif size == 0 and tokens >= capacity - EPSILON then
  return {}
end
-- milliseconds until a unit-cost call would pass the window and the bucket (BudgetTable.waitMs)
local ms = 0
if limit > 0 and size >= limit then
  ms = ceilMs(oldest(s, width, base, first) + window - now)
end
if capacity > 0 and tokens < 1.0 - EPSILON and refill > 0 then
  ms = math.max(ms, tokensMs(refill, 1.0 - tokens))
end
local f = '%.17g'
return {string.format(f, size), string.format(f, tokens), string.format(f, ms),
  string.format(f, used)}
