-- Shared part of every script of this store: the Java side prepends it to each algorithm's file
-- (acquire.lua, reconcile.lua, inspect.lua) before loading, so each loaded script is
-- self-contained. Redis 6.2 runs a script's whole body on every call, so every function defined
-- here is created anew per call: this part defines only the few that every script needs, and the
-- model-token ones only when a level limits model tokens (modelTokens() below).
--
-- The arithmetic mirrors the in-memory store of rate-limiter-core (BudgetTable, KeyEntry) operation
-- for operation, in IEEE doubles like Java, so that both stores give the same decisions.
--
-- State of one level (one budget applied to one key), in keys sharing the call's hash tag:
--   s  the window log and the bucket, one string (layout 2; absent means fresh):
--        a header struct.pack('<Bddd', width, tokens, refilledAt, base), 25 bytes: the width of a
--        log entry (4 or 8 bytes), the bucket's tokens as of refilledAt (unused without a bucket),
--        the time the log's entries count from;
--        then the admissions, oldest first, each its time minus base: '<I4' (width 4, used while
--        the window is at most 2^31 time units, rebased when an offset would pass 2^32 - 1) or
--        '<d' (width 8, exact below 2^53). Entries a whole window old are dropped from the head.
--   m  the model-token (TPM) window: a sorted set of reservation ids, score = time of the entry
--   a  the model-token amounts: a hash {<id> = model tokens, s = their sum}
--   (m and a are passed, and exist, only for budgets with a model-token limit)
-- Common ARGV:
--   1  now in time units, or '' to read the server's TIME (microseconds)
--   2  time units per millisecond (1000 for microseconds, 1000000 for nanoseconds)
--   3  the least TTL in milliseconds a written key gets (0: expire exactly when fresh again)
-- A level is described by 7 further ARGV values: window limit (0: no window), window length in
-- time units, bucket capacity (0: no bucket), refill per second, refill per time unit, model-token
-- limit (0: none), model-token window length in time units.

local EPSILON = 1e-9
local HEADER = '<Bddd'
local HEADER_LEN = 25
local MAX_OFFSET4 = 4294967295
local spack, sunpack = struct.pack, struct.unpack

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

-- Milliseconds to regain deficit tokens at refill per second, at least 1 (BudgetTable.tokensMs)
local function tokensMs(refill, deficit)
  local ms = deficit * 1000.0 / refill
  local up = math.ceil(ms)
  if up - ms > 1.0 - EPSILON * 1000.0 / refill and up - 1 > 0 then
    up = up - 1
  end
  if up < 1 then
    return 1
  end
  return up
end

-- A number for a script's reply: a whole number below 2^53 as an integer reply (exact, and no
-- formatting), anything else (inf, a fraction, a larger number) as its %.17g string, which
-- round-trips a double (a Lua number past 2^63 has no integer reply)
local function out(x)
  if x == math.floor(x) and x < 9007199254740992 and x > -9007199254740992 then
    return x
  end
  return string.format('%.17g', x)
end

-- Reads level L (its fields key and the 7 values from ARGV[b + 1]) from its state key. With
-- normalize (BudgetTable.normalize), brings it to now: admissions a whole window old dropped (they
-- leave from the head: at most the ones that leave now are read), the bucket refilled. Sets size,
-- newest (when size > 0), tokens, and what save needs.
local function load(L, b, normalize)
  L.limit = tonumber(ARGV[b + 1])
  L.window = tonumber(ARGV[b + 2])
  L.capacity = tonumber(ARGV[b + 3])
  L.refill = tonumber(ARGV[b + 4])
  L.tpmLimit = tonumber(ARGV[b + 6])
  L.hasWindow = L.limit > 0
  L.hasBucket = L.capacity > 0
  L.hasTpm = L.tpmLimit > 0
  L.size = 0
  L.tokens = L.capacity
  L.refilledAt = now
  L.tpmSum = 0
  L.tpmSize = 0
  if not normalize then
    return
  end
  local s = redis.call('GET', L.key)
  local width, base, first = 4, 0, 0
  if s then
    local tokens, at
    if #s >= HEADER_LEN then
      width, tokens, at, base = sunpack(HEADER, s)
    else
      width = 0
    end
    if (width == 4 or width == 8) and (#s - HEADER_LEN) % width == 0 then
      L.exists = true
      if L.hasBucket then
        local elapsed = now - at
        if elapsed > 0 then
          if tokens < L.capacity then
            tokens = math.min(L.capacity, tokens + elapsed * tonumber(ARGV[b + 5]))
            L.dirty = true -- the refill is kept, as the in-memory store keeps it
          end
          at = now
        end
        L.tokens = tokens
        L.refilledAt = at
      end
      if L.hasWindow and #s > HEADER_LEN then
        local n = (#s - HEADER_LEN) / width
        local fmt = width == 4 and '<I4' or '<d'
        local cut = now - L.window -- an admission at or before cut has left the window
        local newest = base + sunpack(fmt, s, HEADER_LEN + 1 + (n - 1) * width)
        if newest <= cut then
          first = n
        else
          while base + sunpack(fmt, s, HEADER_LEN + 1 + first * width) <= cut do
            first = first + 1
          end
          L.newest = newest
        end
        L.size = n - first
        if first > 0 then
          L.dirty = true
        end
      end
    else
      s = nil -- not this layout: read as fresh, and replaced when written
      width, base = 4, 0
    end
  end
  if not s and L.hasWindow and L.window > 2147483648 then
    width = 8
  end
  L.state = s
  L.width = width
  L.base = base
  L.first = first
end

-- The time of the oldest admission of a non-empty window log.
local function oldest(L)
  if L.added and L.size == 1 then
    return L.added
  end
  return L.base + sunpack(L.width == 4 and '<I4' or '<d', L.state, HEADER_LEN + 1 + L.first * L.width)
end

-- Appends an admission at now to L's window log. Should the server's clock have gone back, at the
-- newest admission instead, so that the log stays sorted and no admission leaves early.
local function admit(L)
  local t = now
  if L.size > 0 then
    if L.newest > t then
      t = L.newest
    end
  else
    L.state = nil -- every earlier admission has left: the log restarts at t
    L.first = 0
    L.base = t
    if L.window > 2147483648 then
      L.width = 8
    end
  end
  L.added = t
  L.newest = t
  L.size = L.size + 1
  L.dirty = true
end

-- Writes L's state if it changed, to expire once it would be fresh again (the newest admission a
-- whole window old, the bucket full), at least minTtlMs from now; deletes it once fresh. A charged
-- bucket that never refills keeps its key without expiry.
local function save(L)
  if not L.dirty then
    return
  end
  local hasLog = L.hasWindow and L.size > 0
  if not hasLog and not (L.hasBucket and L.tokens < L.capacity) then
    if L.exists then
      redis.call('DEL', L.key)
    end
    return
  end
  local ttl = 0
  if hasLog then
    ttl = ceilMs(L.newest + L.window - now) + 1
  end
  if L.hasBucket and L.tokens < L.capacity then
    ttl = math.max(ttl, L.refill > 0 and tokensMs(L.refill, L.capacity - L.tokens) + 1 or math.huge)
  end
  local width = L.width
  local log = ''
  if hasLog then
    local kept = L.size - (L.added and 1 or 0)
    if kept > 0 then
      log = string.sub(L.state, HEADER_LEN + 1 + L.first * width)
    end
    if L.added then
      local offset = L.added - L.base
      if width == 4 and offset > MAX_OFFSET4 then
        -- the offsets count from a base that is too old: count them from the oldest admission
        -- (an offset then stays below the window's length), in 8 bytes if even that is too long
        local from = kept > 0 and oldest(L) or L.added
        local times = {}
        for j = 1, kept do
          times[j] = L.base + sunpack('<I4', log, 1 + (j - 1) * 4)
        end
        if L.added - from > MAX_OFFSET4 then
          width = 8
        end
        local fmt = width == 4 and '<I4' or '<d'
        for j = 1, kept do
          times[j] = spack(fmt, times[j] - from)
        end
        log = table.concat(times)
        L.base = from
        offset = L.added - from
      end
      log = log .. spack(width == 4 and '<I4' or '<d', offset)
    end
  end
  local value = spack(HEADER, width, L.tokens, L.refilledAt, L.base) .. log
  if ttl < 1e14 then
    redis.call('SET', L.key, value, 'PX', math.max(ttl, minTtlMs))
  else
    redis.call('SET', L.key, value) -- no expiry: a one-shot budget never refills
  end
end

-- Milliseconds until L is fresh again: its window, bucket and model-token window
-- (BudgetTable.resetMs).
local function resetMs(L)
  local ms = 0
  if L.hasWindow and L.size > 0 then
    ms = ceilMs(L.newest + L.window - now)
  end
  if L.hasBucket and L.refill > 0 and L.tokens < L.capacity then
    ms = math.max(ms, tokensMs(L.refill, L.capacity - L.tokens))
  end
  if L.hasTpm and L.tpmSize > 0 then
    ms = math.max(ms, ceilMs(L.tpmNewest + L.tpmWindow - now))
  end
  return ms
end

-- The model-token functions, created on first use: most calls limit no model tokens.
local T
local function modelTokens()
  if T then
    return T
  end
  T = {}

  -- Reads L's model-token window (its fields mkey, akey and the values from ARGV[b + 6]),
  -- dropping the entries a whole window old (KeyEntry.expireModelTokens).
  function T.load(L, b)
    L.tpmWindow = tonumber(ARGV[b + 7])
    local old = redis.call('ZRANGEBYSCORE', L.mkey, '-inf', now - L.tpmWindow)
    L.tpmSum = tonumber(redis.call('HGET', L.akey, 's') or '0')
    if #old > 0 then
      local amounts = redis.call('HMGET', L.akey, unpack(old))
      for j = 1, #old do
        L.tpmSum = L.tpmSum - tonumber(amounts[j] or '0')
      end
      redis.call('HDEL', L.akey, unpack(old))
      redis.call('ZREMRANGEBYSCORE', L.mkey, '-inf', now - L.tpmWindow)
      L.tpmDirty = true
    end
    L.tpmSize = redis.call('ZCARD', L.mkey)
    if L.tpmSize > 0 then
      L.tpmNewest = tonumber(redis.call('ZRANGE', L.mkey, -1, -1, 'WITHSCORES')[2])
    end
  end

  -- Adds a model-token entry (KeyEntry.appendModelTokens).
  function T.append(L, id, amount)
    redis.call('ZADD', L.mkey, now, id)
    redis.call('HSET', L.akey, id, string.format('%.17g', amount))
    L.tpmSum = L.tpmSum + amount
    L.tpmSize = L.tpmSize + 1
    L.tpmNewest = now
    L.tpmDirty = true
  end

  -- Writes what changed of L's model-token window, expiring once it would be empty.
  function T.save(L)
    if not L.tpmDirty then
      return
    end
    if L.tpmSize == 0 then
      redis.call('DEL', L.mkey, L.akey)
    else
      redis.call('HSET', L.akey, 's', string.format('%.17g', L.tpmSum))
      local ttl = math.max(ceilMs(L.tpmNewest + L.tpmWindow - now) + 1, minTtlMs)
      redis.call('PEXPIRE', L.mkey, ttl)
      redis.call('PEXPIRE', L.akey, ttl)
    end
  end

  return T
end
