-- One composed decision over N levels (a hierarchy; N = 1 for a single budget), atomically
-- (InMemoryStore.decide), optionally reserving model tokens (InMemoryStore.reserve). Runs after
-- lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: per level, root first, its state key, then its model-token window and amounts when it
--   limits model tokens; all share one hash tag (one slot on Redis Cluster); last, only when the
--   first reservation id is not 0, the counter that numbers this root's reservations
-- ARGV[1] after the three of lib.lua: the call's cost in bucket tokens; 1 sequential (the window,
--   the bucket, the model tokens, level after level; what ran before a deny stays charged) or 0
--   reserve-then-commit (all checked first, all charged or none); N, the number of levels; the
--   estimated model tokens (0 for a plain acquire); the first reservation id of this store (0: no
--   reservation; one is numbered only when some level limits model tokens); the deadline: the
--   call's caller stops waiting at this time (in the script's time units), so a call that runs
--   later charges nothing and replies EXPIRED (0: no deadline)
-- ARGV[1 + i]: level i (see lib.lua)
-- Returns {allowed (1|0), reason, level (1-based), remaining, retryAfterMs, resetAfterMs,
--          retryable (1|0), reservation id, remaining model tokens, model-token reset ms, now,
--          the id numbered for the call (0: none; in sequential composition a deny after levels that
--          reserved model tokens keeps their entries under it)}: whole numbers below 2^53 as
--          integers, any other number (inf) as its %.17g string.
--
-- The common case, one level in sequential mode without model tokens, runs straight through:
-- one GET and one SET, no table per level.

local cost, sequential, n, estimate, idBase, deadline = struct.unpack('<dddddd', ARGV[1], 25)
if deadline > 0 and now > deadline then
  return {0, 'EXPIRED', 1, 0, 0, 0, 0, 0, 0, 0, out(now), 0}
end
sequential = sequential == 1

local id = 0
if idBase ~= 0 then
  for i = 1, n do
    if select(6, struct.unpack(LEVEL, ARGV[1 + i])) > 0 then
      id = idBase + redis.call('INCR', KEYS[#KEYS])
      redis.call('PEXPIRE', KEYS[#KEYS], 86400000) -- ids outlive any entry that holds them
      break
    end
  end
end

-- Every level, root first: loaded and checked; sequential: charged up to its own deny and written
-- on the spot, and a level after a deny only read for its model tokens; reserve-then-commit: kept
-- (in pending) until every level is checked. The first deny gives the reply.
local denied, component -- the first denying level, and its component: 1 window, 2 bucket, 3 tokens
local left, ms, retry -- its remaining calls, milliseconds until fresh, retry (window, bucket)
local best, binding, reset = math.huge, 1, 0
local pending = {}
local tpm = {} -- the levels that limit model tokens (tables for the model-token functions)
local k = 1
for i = 1, n do
  local limit, window, capacity, refill, perUnit, tpmLimit, tpmWindow =
    struct.unpack(LEVEL, ARGV[1 + i])
  local key = KEYS[k]
  local L
  k = k + 1
  if tpmLimit > 0 then
    L = {mkey = KEYS[k], akey = KEYS[k + 1], tpmLimit = tpmLimit, tpmWindow = tpmWindow}
    k = k + 2
    modelTokens().load(L) -- even a level a deny never reached: to report what is left now
    tpm[#tpm + 1] = L
  end
  if not (sequential and denied) then
    local s, width, base, first, size, newest, tokens, at, dirty =
      load(key, limit, window, capacity, perUnit)
    local c = 0
    if limit > 0 and size >= limit then
      c = 1
    elseif capacity > 0 and tokens < cost - EPSILON then
      c = 2
    elseif L and L.tpmSum + estimate > L.tpmLimit then
      c = 3
    end
    local remaining, levelMs
    if sequential then
      -- a window that admitted stays charged whatever denies after it (the seed's order)
      remaining, levelMs = commit(key, s, width, base, first, size, newest, tokens, at, dirty,
        limit, window, capacity, refill, c ~= 1 and limit > 0,
        (c == 0 or c == 3) and capacity > 0 and cost or 0)
      if L and c == 0 and id ~= 0 then
        T.append(L, id, estimate)
      end
    else
      pending[i] = {key, s, width, base, first, size, newest, tokens, at, dirty, limit, window,
        capacity, refill, L}
      if c > 0 and not denied then -- what the reply needs, not written
        remaining, levelMs = commit(key, s, width, base, first, size, newest, tokens, at, false,
          limit, window, capacity, refill, false, 0)
      end
    end
    if L and levelMs then
      levelMs = math.max(levelMs, T.resetMs(L))
    end
    if c > 0 and not denied then
      denied, component, left, ms = i, c, remaining, levelMs
      if c == 1 then
        retry = math.max(1, ceilMs(oldest(s, width, base, first) + window - now))
      elseif c == 2 then
        left = math.floor(tokens + EPSILON)
        retry = refill > 0 and tokensMs(refill, cost - tokens) or 0
      else
        retry = T.retryMs(L, estimate)
      end
    end
    if sequential then
      if remaining < best then
        best, binding = remaining, i
      end
      reset = math.max(reset, levelMs)
    end
  end
end
if not sequential then
  -- all charged, or none: each level is written as normalized, and charged when nothing denied
  local charge = not denied
  for i = 1, n do
    local p = pending[i]
    local L = p[15]
    local remaining, levelMs = commit(p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
      p[10], p[11], p[12], p[13], p[14], charge and p[11] > 0, charge and p[13] > 0 and cost or 0)
    if L then
      if charge and id ~= 0 then
        T.append(L, id, estimate)
      end
      levelMs = math.max(levelMs, T.resetMs(L))
    end
    if remaining < best then
      best, binding = remaining, i
    end
    reset = math.max(reset, levelMs)
  end
end
-- what is left of the model-token windows now, over every level that limits them
local reserved, tpmRemaining, tpmReset = 0, 'inf', 0
if #tpm > 0 then
  tpmRemaining = math.huge
  for j = 1, #tpm do
    local L = tpm[j]
    T.save(L)
    tpmRemaining = math.min(tpmRemaining, math.max(0, L.tpmLimit - L.tpmSum))
    tpmReset = math.max(tpmReset, T.resetMs(L))
  end
  reserved, tpmRemaining, tpmReset = out(denied and 0 or id), out(tpmRemaining), out(tpmReset)
end
if not denied then
  return {1, 'OK', binding, out(best), 0, out(reset), 1, reserved, tpmRemaining, tpmReset, out(now), out(id)}
elseif component == 1 then
  return {0, 'RPM_LIMIT', denied, 0, out(retry), out(ms), 1, 0, tpmRemaining, tpmReset, out(now), out(id)}
elseif component == 2 then
  -- a bucket that never refills: not retryable (retry 0 must never read as "retry now")
  return {0, 'BURST_LIMIT', denied, out(left), out(retry), out(ms), retry > 0 and 1 or 0, 0,
    tpmRemaining, tpmReset, out(now), out(id)}
end
return {0, 'TPM_LIMIT', denied, out(left), out(retry), out(ms), 1, 0, tpmRemaining, tpmReset, out(now), out(id)}
