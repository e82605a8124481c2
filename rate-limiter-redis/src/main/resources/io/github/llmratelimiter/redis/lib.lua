-- Shared part of every script of this store: the Java side prepends it to each algorithm's file
-- (acquire.lua, inspect.lua) before loading, so each loaded script is self-contained.
--
-- The arithmetic mirrors the in-memory store of rate-limiter-core (BudgetTable, KeyEntry) operation
-- for operation, in IEEE doubles like Java, so that both stores give the same decisions. Every
-- number that leaves a script is formatted with %.17g, which round-trips a double exactly.
--
-- State of one level (one budget applied to one key), in two keys sharing the call's hash tag:
--   the sliding-window log: a sorted set of admissions, score = admission time, members unique
--   the token bucket: a hash {t = tokens, r = time of the last refill}; absent means full
-- Common ARGV:
--   1  now in time units, or '' to read the server's TIME (microseconds)
--   2  time units per millisecond (1000 for microseconds, 1000000 for nanoseconds)
--   3  the least TTL in milliseconds a written key gets (0: expire exactly when fresh again)
-- A level is described by 5 further ARGV values: window limit (0: no window), window length in
-- time units, bucket capacity (0: no bucket), refill per second, refill per time unit.

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

-- Reads a level from wkey, bkey and the 5 ARGV values after index b, and brings it to now:
-- expired admissions dropped, the bucket refilled (BudgetTable.normalize).
local function load(wkey, bkey, b)
  local L = {
    wkey = wkey, bkey = bkey,
    limit = tonumber(ARGV[b + 1]), window = tonumber(ARGV[b + 2]),
    capacity = tonumber(ARGV[b + 3]), refill = tonumber(ARGV[b + 4]),
    refillPerUnit = tonumber(ARGV[b + 5]),
    size = 0, tokens = 0, dirty = false, exists = false,
  }
  L.hasWindow = L.limit > 0
  L.hasBucket = L.capacity > 0
  if L.hasWindow then
    redis.call('ZREMRANGEBYSCORE', wkey, '-inf', now - L.window)
    L.size = redis.call('ZCARD', wkey)
    if L.size > 0 then
      L.exists = true
      L.oldest = tonumber(redis.call('ZRANGE', wkey, 0, 0, 'WITHSCORES')[2])
      L.newest = tonumber(redis.call('ZRANGE', wkey, -1, -1, 'WITHSCORES')[2])
    end
  end
  if L.hasBucket then
    local h = redis.call('HMGET', bkey, 't', 'r')
    if h[1] then
      L.exists = true
      L.tokens = tonumber(h[1])
      L.refilledAt = tonumber(h[2])
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
  if L.windowCharged then
    local ttl = ceilMs(L.newest + L.window - now) + 1
    redis.call('PEXPIRE', L.wkey, math.max(ttl, minTtlMs))
  end
  if L.dirty then
    if L.tokens >= L.capacity then
      redis.call('DEL', L.bkey) -- a full bucket is a fresh one
    else
      redis.call('HSET', L.bkey, 't', num(L.tokens), 'r', num(L.refilledAt))
      local ttl = L.refill > 0 and tokensMs(L, L.capacity - L.tokens) + 1 or math.huge
      if ttl < 1e15 then
        redis.call('PEXPIRE', L.bkey, math.max(ttl, minTtlMs))
      else
        redis.call('PERSIST', L.bkey) -- never refills: a one-shot budget must not expire
      end
    end
  end
end
