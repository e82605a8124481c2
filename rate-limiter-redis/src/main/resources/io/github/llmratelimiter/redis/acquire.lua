-- One composed decision over N levels (a hierarchy; N = 1 for a single budget), atomically
-- (InMemoryStore.decide), optionally reserving model tokens (InMemoryStore.reserve). Runs after
-- lib.lua, which reads ARGV 1-3.
--
-- KEYS: per level, root first, its state key, then its model-token window and amounts when it
--   limits model tokens (ARGV of the level: model-token limit > 0); all share one hash tag (one
--   slot on Redis Cluster); last, only when ARGV[8] is not '0', the counter that numbers this
--   root's reservations
-- ARGV:
--   4  the call's cost in bucket tokens
--   5  'S' sequential (the window, the bucket, the model tokens, level after level; what ran
--      before a deny stays charged) or 'R' reserve-then-commit (all checked first, all charged
--      or none)
--   6  N, the number of levels
--   7  the estimated model tokens (0 for a plain acquire)
--   8  the first reservation id of this store (a reservation is numbered only when ARGV[8] is not
--      '0' and some level limits model tokens)
--   then 7 values per level (see lib.lua)
-- Returns {allowed (1|0), reason, level (1-based), remaining, retryAfterMs, resetAfterMs,
--          retryable (1|0), reservation id, remaining model tokens, model-token reset ms}: whole
--          numbers below 2^53 as integers, any other number (inf) as its %.17g string.

local cost = tonumber(ARGV[4])
local sequential = ARGV[5] == 'S'
local n = tonumber(ARGV[6])
local estimate = tonumber(ARGV[7])
local reserving = ARGV[8] ~= '0'

local id = 0
if reserving then
  for i = 1, n do
    if tonumber(ARGV[8 + (i - 1) * 7 + 6]) > 0 then
      id = tonumber(ARGV[8]) + redis.call('INCR', KEYS[#KEYS])
      redis.call('PEXPIRE', KEYS[#KEYS], 86400000) -- ids outlive any entry that holds them
      break
    end
  end
end

-- Loads every level, root first (sequential: a level after a deny only for its model tokens),
-- and finds the first deny: its level and component (1 window, 2 bucket, 3 model tokens). Each
-- level is charged what the composition says: sequential, up to its own deny, on the spot;
-- reserve-then-commit, everything afterwards when nothing denies.
local levels = {}
local denied, component = nil, 0
local k = 1
for i = 1, n do
  local L = {key = KEYS[k]}
  local b = 8 + (i - 1) * 7
  local reached = not (sequential and denied)
  load(L, b, reached)
  k = k + 1
  if L.hasTpm then
    L.mkey, L.akey = KEYS[k], KEYS[k + 1]
    k = k + 2
    modelTokens().load(L, b) -- even a level a deny never reached: to report what is left now
  end
  levels[i] = L
  if reached then
    local c = 0
    if L.hasWindow and L.size >= L.limit then
      c = 1
    elseif L.hasBucket and L.tokens < cost - EPSILON then
      c = 2
    elseif L.hasTpm and L.tpmSum + estimate > L.tpmLimit then
      c = 3
    end
    if c > 0 and not denied then
      denied, component = i, c
    end
    if sequential and c ~= 1 then
      -- a window that admitted stays charged whatever denies after it (the seed's order)
      if L.hasWindow then
        admit(L)
      end
      if c ~= 2 and L.hasBucket then
        L.tokens = math.max(0, L.tokens - cost)
        L.dirty = true
      end
      if c == 0 and L.hasTpm and id ~= 0 then
        T.append(L, id, estimate)
      end
    end
  end
end
if not sequential and not denied then
  for i = 1, n do
    local L = levels[i]
    if L.hasWindow then
      admit(L)
    end
    if L.hasBucket then
      L.tokens = math.max(0, L.tokens - cost)
      L.dirty = true
    end
    if L.hasTpm and id ~= 0 then
      T.append(L, id, estimate)
    end
  end
end

-- Whole unit-cost calls both components of L admit now (BudgetTable.remaining).
local function remaining(L)
  local r = math.huge
  if L.hasWindow then
    r = L.limit - L.size
  end
  if L.hasBucket then
    r = math.min(r, math.floor(L.tokens + EPSILON))
  end
  return r
end

local result
if denied then
  local L = levels[denied]
  if component == 1 then
    local retry = math.max(1, ceilMs(oldest(L) + L.window - now))
    result = {0, 'RPM_LIMIT', denied, 0, out(retry), out(resetMs(L)), 1}
  elseif component == 2 then
    local rem = out(math.floor(L.tokens + EPSILON))
    if L.refill == 0 then
      result = {0, 'BURST_LIMIT', denied, rem, 0, out(resetMs(L)), 0}
    else
      result = {0, 'BURST_LIMIT', denied, rem, out(tokensMs(L.refill, cost - L.tokens)),
        out(resetMs(L)), 1}
    end
  else
    -- milliseconds until enough model tokens leave for the estimate (BudgetTable.modelTokensRetryMs)
    local excess = L.tpmSum + estimate - L.tpmLimit
    local retry = math.max(1, ceilMs(L.tpmWindow))
    local entries = redis.call('ZRANGE', L.mkey, 0, -1, 'WITHSCORES')
    for j = 1, #entries, 2 do
      excess = excess - tonumber(redis.call('HGET', L.akey, entries[j]) or '0')
      if excess <= 0 then
        retry = math.max(1, ceilMs(tonumber(entries[j + 1]) + L.tpmWindow - now))
        break
      end
    end
    result = {0, 'TPM_LIMIT', denied, out(remaining(L)), out(retry), out(resetMs(L)), 1}
  end
else
  -- whole unit-cost calls every level still admits, and the level that binds (the first lowest)
  local best = math.huge
  local binding = 1
  local reset = 0
  for i = 1, n do
    local L = levels[i]
    local r = remaining(L)
    if r < best then
      best = r
      binding = i
    end
    reset = math.max(reset, resetMs(L))
  end
  result = {1, 'OK', binding, out(best), 0, out(reset), 1}
end

-- what is left of the model-token windows now, over every level that limits them
local tpmRemaining = math.huge
local tpmReset = 0
for i = 1, n do
  local L = levels[i]
  save(L)
  if L.hasTpm then
    T.save(L)
    tpmRemaining = math.min(tpmRemaining, math.max(0, L.tpmLimit - L.tpmSum))
    if L.tpmSize > 0 then
      tpmReset = math.max(tpmReset, ceilMs(L.tpmNewest + L.tpmWindow - now))
    end
  end
end
result[8] = out(result[1] == 1 and id or 0)
result[9] = out(tpmRemaining)
result[10] = out(tpmReset)
return result
