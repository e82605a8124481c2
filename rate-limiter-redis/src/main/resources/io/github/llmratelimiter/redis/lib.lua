-- Shared part of every script of this store: the Java side prepends it to each algorithm's file
-- (acquire.lua, inspect.lua) before loading, so each loaded script is self-contained.
--
-- The arithmetic mirrors the in-memory store of rate-limiter-core (BudgetTable, KeyEntry) operation
-- for operation, in IEEE doubles like Java, so that both stores give the same decisions. Every
-- number that leaves a script is formatted with %.17g, which round-trips a double exactly.
--
-- State of one level (one budget applied to one key), in four keys sharing the call's hash tag:
--   w  the sliding-window log: a sorted set of admissions, score = admission time, members unique
--      (the time; a further admission at the same time: the time and '-<n>', see acquire.lua)
--   b  the token bucket: a string '<tokens> <time of the last refill>'; absent means full
--   m  the model-token (TPM) window: a sorted set of reservation ids, score = time of the entry
--   a  the model-token amounts: a hash {<id> = model tokens, s = their sum}
-- Common ARGV:
--   1  now in time units, or '' to read the server's TIME (microseconds)
--   2  time units per millisecond (1000 for microseconds, 1000000 for nanoseconds)
--   3  the least TTL in milliseconds a written key gets (0: expire exactly when fresh again)
-- A level is described by 7 further ARGV values: window limit (0: no window), window length in
-- time units, bucket capacity (0: no bucket), refill per second, refill per time unit, model-token
-- limit (0: none), model-token window length in time units.

local EPSILON = 1e-9

local now
if ARGV[1] == '' then
  if redis.replicate_commands then
    redis.replicate_commands() -- replicate effects, not the script: TIME is not deterministic
  end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local unitsPerMs = tonumber(ARGV[2])
local minTtlMs = tonumber(ARGV[3])

local function num(x)
  return string.format('%.17g', x)
end

-- A number for a script's reply: a whole number below 2^53 as an integer reply (exact, and no
-- formatting), anything else (inf, a fraction, a larger number) as its %.17g string, which the
-- client reads as before (a Lua number past 2^63 has no integer reply)
local function out(x)
  if x == math.floor(x) and x < 9007199254740992 and x > -9007199254740992 then
    return x
  end
  return num(x)
end

-- ceil(units / unitsPerMs) for units > 0, else 0 (BudgetTable.ceilMs), exact for whole units
local function ceilMs(units)
  if units <= 0 then
    return 0
  end
  local q = math.floor(units / unitsPerMs)
  if q * unitsPerMs < units then
    q = q + 1
  elseif (q - 1) * unitsPerMs >= units then
    q = q - 1
  end
  return q
end

-- Milliseconds to regain deficit tokens, at least 1 (BudgetTable.tokensMs)
local function tokensMs(L, deficit)
  local ms = deficit * 1000.0 / L.refill
  local up = math.ceil(ms)
  local toleranceMs = EPSILON * 1000.0 / L.refill
  if up - ms > 1.0 - toleranceMs and up - 1 > 0 then
    up = up - 1
  end
  return math.max(1, up)
end

-- Reads the model-token window of level L, dropping the entries a whole window old when
-- normalize is true (KeyEntry.expireModelTokens), else as last written.
local function loadModelTokens(L, normalize)
  if normalize then
    local old = redis.call('ZRANGEBYSCORE', L.mkey, '-inf', now - L.tpmWindow)
    if #old > 0 then
      local amounts = redis.call('HMGET', L.akey, unpack(old))
      L.tpmSum = tonumber(redis.call('HGET', L.akey, 's') or '0')
      for j = 1, #old do
        L.tpmSum = L.tpmSum - tonumber(amounts[j] or '0')
      end
      redis.call('HDEL', L.akey, unpack(old))
      redis.call('ZREMRANGEBYSCORE', L.mkey, '-inf', now - L.tpmWindow)
      L.tpmDirty = true
    end
  end
  if L.tpmSum == nil then
    L.tpmSum = tonumber(redis.call('HGET', L.akey, 's') or '0')
  end
  L.tpmSize = redis.call('ZCARD', L.mkey)
  if L.tpmSize > 0 then
    L.exists = true
    L.tpmNewest = tonumber(redis.call('ZRANGE', L.mkey, -1, -1, 'WITHSCORES')[2])
  end
end

-- Reads a level from its four keys k = {w, b, m, a} and the 7 ARGV values after index b. With
-- normalize (BudgetTable.normalize), brings it to now: expired admissions and model-token entries
-- dropped, the bucket refilled; without, reads only the model-token window as last written.
local function load(k, b, normalize)
  local L = {
    wkey = k[1], bkey = k[2], mkey = k[3], akey = k[4],
    limit = tonumber(ARGV[b + 1]), window = tonumber(ARGV[b + 2]),
    capacity = tonumber(ARGV[b + 3]), refill = tonumber(ARGV[b + 4]),
    refillPerUnit = tonumber(ARGV[b + 5]),
    tpmLimit = tonumber(ARGV[b + 6]), tpmWindow = tonumber(ARGV[b + 7]),
    size = 0, tokens = 0, dirty = false, exists = false, tpmSize = 0, tpmDirty = false,
  }
  L.hasWindow = L.limit > 0
  L.hasBucket = L.capacity > 0
  L.hasTpm = L.tpmLimit > 0
  if L.hasTpm then
    loadModelTokens(L, normalize)
  else
    L.tpmSum = 0
  end
  if not normalize then
    return L
  end
  if L.hasWindow then
    redis.call('ZREMRANGEBYSCORE', L.wkey, '-inf', now - L.window)
    L.size = redis.call('ZCARD', L.wkey)
    if L.size > 0 then
      L.exists = true -- the oldest and newest admissions are read when needed (oldestOf, newestOf)
    end
  end
  if L.hasBucket then
    local s = redis.call('GET', L.bkey)
    if s then
      local space = string.find(s, ' ', 1, true)
      L.exists = true
      L.tokens = tonumber(string.sub(s, 1, space - 1))
      L.refilledAt = tonumber(string.sub(s, space + 1))
      local elapsed = now - L.refilledAt
      if elapsed > 0 then
        L.tokens = math.min(L.capacity, L.tokens + elapsed * L.refillPerUnit)
        L.refilledAt = now
      end
      L.dirty = true -- the refill is kept, as the in-memory store keeps it
    else
      L.tokens = L.capacity
      L.refilledAt = now
    end
  end
  return L
end

-- The time of the oldest admission in a non-empty window log, read once when first needed.
local function oldestOf(L)
  if L.oldest == nil then
    L.oldest = tonumber(redis.call('ZRANGE', L.wkey, 0, 0, 'WITHSCORES')[2])
  end
  return L.oldest
end

-- The time of the newest admission in a non-empty window log (now, once this call appended one).
local function newestOf(L)
  if L.newest == nil then
    L.newest = tonumber(redis.call('ZRANGE', L.wkey, -1, -1, 'WITHSCORES')[2])
  end
  return L.newest
end

-- Adds a model-token entry (KeyEntry.appendModelTokens).
local function appendModelTokens(L, id, amount)
  redis.call('ZADD', L.mkey, now, id)
  redis.call('HSET', L.akey, id, num(amount))
  L.tpmSum = L.tpmSum + amount
  L.tpmSize = L.tpmSize + 1
  L.tpmNewest = now
  L.tpmDirty = true
end

-- Milliseconds until the model-token window is empty (BudgetTable.modelTokensResetMs).
local function modelTokensResetMs(L)
  if not L.hasTpm or L.tpmSize == 0 then
    return 0
  end
  return ceilMs(L.tpmNewest + L.tpmWindow - now)
end

local function windowFull(L)
  return L.hasWindow and L.size >= L.limit
end

local function bucketShort(L, cost)
  return L.hasBucket and L.tokens < cost - EPSILON
end

local function bucketRemaining(L)
  return math.floor(L.tokens + EPSILON)
end

-- Writes what changed and sets each key to expire once its state would be fresh again.
local function save(L)
  if L.tpmDirty then
    if L.tpmSize == 0 then
      redis.call('DEL', L.mkey, L.akey)
    else
      redis.call('HSET', L.akey, 's', num(L.tpmSum))
      local ttl = math.max(ceilMs(L.tpmNewest + L.tpmWindow - now) + 1, minTtlMs)
      redis.call('PEXPIRE', L.mkey, ttl)
      redis.call('PEXPIRE', L.akey, ttl)
    end
  end
  if L.windowCharged then
    local ttl = ceilMs(newestOf(L) + L.window - now) + 1
    redis.call('PEXPIRE', L.wkey, math.max(ttl, minTtlMs))
  end
  if L.dirty then
    if L.tokens >= L.capacity then
      redis.call('DEL', L.bkey) -- a full bucket is a fresh one
    else
      local state = string.format('%.17g %.17g', L.tokens, L.refilledAt)
      local ttl = L.refill > 0 and tokensMs(L, L.capacity - L.tokens) + 1 or math.huge
      if ttl < 1e15 then
        redis.call('SET', L.bkey, state, 'PX', math.max(ttl, minTtlMs))
      else
        redis.call('SET', L.bkey, state) -- no expiry: a one-shot budget never refills
      end
    end
  end
end
