-- One composed decision over N levels (a hierarchy; N = 1 for a single budget), atomically
-- (InMemoryStore.decide). Runs after lib.lua, which reads ARGV 1-3.
--
-- KEYS, two per level i (1-based), all sharing one hash tag (one slot on Redis Cluster):
--   KEYS[2i-1] the level's sliding-window log, KEYS[2i] the level's token bucket
-- ARGV:
--   4  the call's cost in tokens
--   5  'S' sequential (the window then the bucket, level after level; what ran before a deny stays
--      charged) or 'R' reserve-then-commit (all checked first, all charged or none)
--   6  N, the number of levels
--   then 5 values per level (see lib.lua)
-- Returns {allowed (1|0), reason, level (1-based), remaining, retryAfterMs, resetAfterMs,
--          retryable (1|0)}, the last four numbers as strings.

local cost = tonumber(ARGV[4])
local sequential = ARGV[5] == 'S'
local n = tonumber(ARGV[6])

local function chargeWindow(L)
  if L.hasWindow then
    local same = redis.call('ZCOUNT', L.wkey, now, now)
    -- members are unique even for equal timestamps: equal scores leave the log together
    redis.call('ZADD', L.wkey, now, string.format('%.0f', now) .. '-' .. same)
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
    units = L.newest + L.window - now
  end
  local ms = ceilMs(units)
  if L.hasBucket and L.refill > 0 and L.tokens < L.capacity then
    ms = math.max(ms, tokensMs(L, L.capacity - L.tokens))
  end
  return ms
end

local function rpmDeny(i, L)
  local retry = math.max(1, ceilMs(L.oldest + L.window - now))
  return {0, 'RPM_LIMIT', i, '0', num(retry), num(resetMs(L)), 1}
end

local function burstDeny(i, L)
  local rem = num(bucketRemaining(L))
  if L.refill == 0 then
    return {0, 'BURST_LIMIT', i, rem, '0', num(resetMs(L)), 0}
  end
  return {0, 'BURST_LIMIT', i, rem, num(tokensMs(L, cost - L.tokens)), num(resetMs(L)), 1}
end

local levels = {}

local function finish(result)
  for i = 1, #levels do
    save(levels[i])
  end
  return result
end

local function level(i)
  return load(KEYS[2 * i - 1], KEYS[2 * i], 6 + (i - 1) * 5)
end

if sequential then
  for i = 1, n do
    local L = level(i) -- levels after a deny are never read, as in the in-memory store
    levels[i] = L
    if windowFull(L) then
      return finish(rpmDeny(i, L))
    end
    if bucketShort(L, cost) then
      chargeWindow(L) -- the RPM allow already happened: its timestamp stays counted
      return finish(burstDeny(i, L))
    end
    chargeWindow(L)
    chargeBucket(L)
  end
else
  for i = 1, n do
    levels[i] = level(i)
  end
  for i = 1, n do
    local L = levels[i]
    if windowFull(L) then
      return finish(rpmDeny(i, L))
    end
    if bucketShort(L, cost) then
      return finish(burstDeny(i, L))
    end
  end
  for i = 1, n do
    chargeWindow(levels[i])
    chargeBucket(levels[i])
  end
end

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
return finish({1, 'OK', binding, num(best), '0', num(reset), 1})
