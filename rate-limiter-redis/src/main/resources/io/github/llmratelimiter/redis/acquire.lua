-- One composed decision over N levels (a hierarchy; N = 1 for a single budget), atomically
-- (InMemoryStore.decide), optionally reserving model tokens (InMemoryStore.reserve). Runs after
-- lib.lua, which reads ARGV 1-3.
--
-- KEYS: four per level i (1-based), all sharing one hash tag (one slot on Redis Cluster):
--   KEYS[4i-3] window log, KEYS[4i-2] bucket, KEYS[4i-1] model-token window, KEYS[4i] amounts;
--   then, only when ARGV[8] is not '0', KEYS[4N+1]: the counter that numbers this root's
--   reservations
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
local idBase = tonumber(ARGV[8])

local function chargeWindow(L)
  if L.hasWindow then
    -- members are unique even for equal timestamps: the first admission at a time is named by the
    -- time; a further one by the time and '-<n>', n the admissions already at that time (each
    -- such n is larger than the last); equal scores leave the log together
    local member = string.format('%.0f', now)
    if redis.call('ZADD', L.wkey, 'NX', now, member) == 0 then
      redis.call('ZADD', L.wkey, now, member .. '-' .. redis.call('ZCOUNT', L.wkey, now, now))
    end
    if L.size == 0 then
      L.oldest = now
    end
    L.size = L.size + 1
    L.newest = now
    L.windowCharged = true
  end
end

local function chargeBucket(L)
  if L.hasBucket then
    L.tokens = math.max(0, L.tokens - cost)
    L.dirty = true
  end
end

local function chargeModelTokens(L, id)
  if L.hasTpm and id ~= 0 then
    appendModelTokens(L, id, estimate)
  end
end

local function modelTokensShort(L)
  return L.hasTpm and L.tpmSum + estimate > L.tpmLimit
end

local function remaining(L)
  local r = math.huge
  if L.hasWindow then
    r = L.limit - L.size
  end
  if L.hasBucket then
    r = math.min(r, bucketRemaining(L))
  end
  return r
end

local function resetMs(L)
  local units = 0
  if L.hasWindow and L.size > 0 then
    units = newestOf(L) + L.window - now
  end
  local ms = ceilMs(units)
  if L.hasBucket and L.refill > 0 and L.tokens < L.capacity then
    ms = math.max(ms, tokensMs(L, L.capacity - L.tokens))
  end
  return math.max(ms, modelTokensResetMs(L))
end

local function rpmDeny(i, L)
  local retry = math.max(1, ceilMs(oldestOf(L) + L.window - now))
  return {0, 'RPM_LIMIT', i, 0, out(retry), out(resetMs(L)), 1}
end

local function burstDeny(i, L)
  local rem = out(bucketRemaining(L))
  if L.refill == 0 then
    return {0, 'BURST_LIMIT', i, rem, 0, out(resetMs(L)), 0}
  end
  return {0, 'BURST_LIMIT', i, rem, out(tokensMs(L, cost - L.tokens)), out(resetMs(L)), 1}
end

-- Milliseconds until enough model tokens leave for the estimate (BudgetTable.modelTokensRetryMs)
local function modelTokensDeny(i, L)
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
  return {0, 'TPM_LIMIT', i, out(remaining(L)), out(retry), out(resetMs(L)), 1}
end

local function keysOf(i)
  return {KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i]}
end

local function base(i)
  return 8 + (i - 1) * 7
end

local id = 0
if idBase ~= 0 then
  for i = 1, n do
    if tonumber(ARGV[base(i) + 6]) > 0 then
      id = idBase + redis.call('INCR', KEYS[4 * n + 1])
      redis.call('PEXPIRE', KEYS[4 * n + 1], 86400000) -- ids outlive any entry that holds them
      break
    end
  end
end

local levels = {}
local result

if sequential then
  for i = 1, n do
    local L = load(keysOf(i), base(i), true) -- levels after a deny are not normalized
    levels[i] = L
    if windowFull(L) then
      result = rpmDeny(i, L)
    elseif bucketShort(L, cost) then
      chargeWindow(L) -- the RPM allow already happened: its timestamp stays counted
      result = burstDeny(i, L)
    elseif modelTokensShort(L) then
      chargeWindow(L)
      chargeBucket(L)
      result = modelTokensDeny(i, L)
    else
      chargeWindow(L)
      chargeBucket(L)
      chargeModelTokens(L, id)
    end
    if result then
      break
    end
  end
  for i = #levels + 1, n do
    -- a level the deny never reached is not charged, nor its window or bucket normalized; only
    -- its model-token window is brought to now, to report what is left of it now
    levels[i] = load(keysOf(i), base(i), false)
    if levels[i].hasTpm then
      loadModelTokens(levels[i], true)
    end
  end
else
  for i = 1, n do
    levels[i] = load(keysOf(i), base(i), true)
  end
  for i = 1, n do
    local L = levels[i]
    if windowFull(L) then
      result = rpmDeny(i, L)
    elseif bucketShort(L, cost) then
      result = burstDeny(i, L)
    elseif modelTokensShort(L) then
      result = modelTokensDeny(i, L)
    end
    if result then
      break
    end
  end
  if not result then
    for i = 1, n do
      chargeWindow(levels[i])
      chargeBucket(levels[i])
      chargeModelTokens(levels[i], id)
    end
  end
end

if not result then
  local best = math.huge
  local binding = 1
  local reset = 0
  for i = 1, n do
    local r = remaining(levels[i])
    if r < best then
      best = r
      binding = i
    end
    reset = math.max(reset, resetMs(levels[i]))
  end
  result = {1, 'OK', binding, out(best), 0, out(reset), 1}
end

-- what is left of the model-token windows now, over every level that limits them
local tpmRemaining = math.huge
local tpmReset = 0
for i = 1, n do
  local L = levels[i]
  if L.hasTpm then
    tpmRemaining = math.min(tpmRemaining, math.max(0, L.tpmLimit - L.tpmSum))
    tpmReset = math.max(tpmReset, modelTokensResetMs(L))
  end
end
for i = 1, n do
  save(levels[i])
end
result[8] = out(result[1] == 1 and id or 0)
result[9] = out(tpmRemaining)
result[10] = out(tpmReset)
return result
