-- The state of one level at now, for monitoring (InMemoryStore.snapshot). Runs after lib.lua,
-- which reads the first three numbers of ARGV[1]. Brings the level to now under the limits given
-- and keeps that, as the in-memory store does.
--
-- KEYS: the level's state key, then its model-token window when it limits model
--   tokens, then its slots when it limits concurrency (see lib.lua)
-- ARGV[1]: the three numbers of lib.lua; ARGV[2]: the level (see lib.lua)
-- Returns {} when the level is untracked or exactly fresh (BudgetTable.isFreshAt: no admission in
-- either window, a bucket at capacity, no slot held), else {windowUsed, tokens, nextFreeMs,
-- modelTokensUsed, inFlight} as strings.

local limit, window, capacity, refill, perUnit, tpmLimit, tpmWindow, slotLimit =
  struct.unpack(LEVEL, ARGV[2])
local s, width, base, first, size, newest, tokens, at, dirty, mark =
  load(KEYS[1], limit, window, capacity, perUnit)
commit(KEYS[1], s, width, base, first, size, newest, tokens, at, dirty, limit, window, capacity,
  refill, false, 0, mark)
local k = 2
local used, tpmSize = 0, 0
if tpmLimit > 0 then
  local L = {mkey = KEYS[2], tpmLimit = tpmLimit, tpmWindow = tpmWindow}
  k = 3
  modelTokens().load(L)
  T.save(L)
  used = math.max(0, L.tpmSum)
  tpmSize = L.tpmSize
end
local held = 0
if slotLimit > 0 then
  held = slots().load(KEYS[k])
end
if tpmSize == 0 and held == 0 and size == 0 and tokens >= capacity then
  return {}
end
-- milliseconds until a unit-cost call would pass the slots, the window and the bucket
-- (BudgetTable.waitMs)
local ms = 0
if slotLimit > 0 and held >= slotLimit then
  ms = C.retryMs(KEYS[k], held, slotLimit)
end
if limit > 0 and size >= limit then
  ms = math.max(ms, ceilMs(nth(s, width, base, first, size - limit) + window - now))
end
if capacity > 0 and tokens + 1e-9 < 1.0 and refill > 0 then
  ms = math.max(ms, tokensMs(refill, perUnit, capacity, 1.0, tokens, at))
end
local f = '%.17g'
return {string.format(f, size), string.format(f, tokens), string.format(f, ms),
  string.format(f, used), string.format(f, held)}
