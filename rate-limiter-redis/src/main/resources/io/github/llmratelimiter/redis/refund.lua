-- Undoes what one acquire.lua call charged: for a call whose caller stopped waiting before its
-- reply came (the failure policy answered it), so that it is not also charged here. Runs after
-- lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: per level, as for acquire.lua (without the counter), then the quota counters charged
-- ARGV[1] after the three of lib.lua: N, the time the call ran (its reply's now), its cost in
--   bucket tokens, the id numbered for it (0: none), then per level two flags: 1 when the call
--   appended to the level's window, 1 when it took its cost from the level's bucket; then the
--   number of quota counters the call charged, and per counter its index in KEYS and the amount
--   it charged; then, optionally (an upstream's charge given back: upstream-acquire.lua), the index
--   in KEYS of the upstream's report, what the charge counted down there (1 a request, plus 2 the
--   model tokens, plus 4 when the call was a probe), the report's ra and ta then, and the call's
--   model tokens: a count is given back only while the report that it was counted from holds, and
--   a probe still going alone (no report since) is owed again
-- ARGV[1 + i]: level i (see lib.lua)
-- ORDER, optionally (an upstream's charge given back for a call with a turn: upstream-acquire.lua
--   counted it in the upstream's order): ARGV[2 + N], doubles: the index in KEYS of the upstream's
--   order key, then OR.admitted's six values as upstream-acquire.lua replied them (NaN for none),
--   the turn's weight, priority class and estimate; ARGV[3 + N] the turn's tenant (a hash),
--   ARGV[4 + N] its waiting call's id (''); the count is undone (lib.lua's OR.undo)
-- Returns {}.
--
-- The window loses one admission, unless the call's own has left it already: the oldest at or
-- after the time the call ran (the call's own, or one of equal effect: any admission that late
-- leaves the window no sooner). The bucket gets back the cost less what it refilled since the call
-- ran (at least 0, at most its capacity): never more than it would hold had the call never run,
-- since a bucket without the call could have reached its capacity and lost refill at most that
-- long. The model-token entries numbered for the call are removed, and the slots it took are
-- given back (release.lua). A quota counter loses what the call charged,
-- from what was used and from what is in flight (never below 0).

local n, ran, cost, id = struct.unpack('<dddd', ARGV[1], 25)
rewrite = true -- a log loses an entry in its middle: commit writes it whole

local k = 1
for i = 1, n do
  local windowCharged, bucketCharged = struct.unpack('<dd', ARGV[1], 57 + (i - 1) * 16)
  local limit, window, capacity, refill, perUnit, tpmLimit, tpmWindow, slotLimit =
    struct.unpack(LEVEL, ARGV[1 + i])
  local key = KEYS[k]
  k = k + 1
  if windowCharged == 1 or bucketCharged == 1 then
    local s, width, base, first, size, newest, tokens, at, dirty, mark =
      load(key, limit, window, capacity, perUnit)
    if s and windowCharged == 1 and size > 0 and ran > now - window then
      s = full(s) -- a refund rewrites the log: read whole
      local fmt = width == 4 and '<I4' or '<d'
      local last = (#s - 37) / width - 1
      for j = first, last do
        if base + struct.unpack(fmt, s, 37 + 1 + j * width) >= ran then
          s = string.sub(s, 1, 37 + j * width) .. string.sub(s, 37 + 1 + (j + 1) * width)
          size = size - 1
          if size > 0 then
            newest = base + struct.unpack(fmt, s, 37 + 1 + (last - 1) * width)
          end
          dirty = true
          break
        end
      end
    end
    if bucketCharged == 1 and capacity > 0 and tokens < capacity then
      local credit = cost - math.max(0, now - ran) * perUnit
      if credit > 0 then
        tokens = math.min(capacity, tokens + credit)
        dirty = true
      end
    end
    commit(key, s, width, base, first, size, newest, tokens, at, dirty, limit, window, capacity,
      refill, false, 0, mark)
  end
  if tpmLimit > 0 then
    if id ~= 0 then
      local L = {mkey = KEYS[k], tpmLimit = tpmLimit, tpmWindow = tpmWindow}
      modelTokens().load(L)
      T.remove(L, id)
      T.save(L)
    end
    k = k + 1
  end
  if slotLimit > 0 then
    if id ~= 0 then
      slots().remove(KEYS[k], id)
    end
    k = k + 1
  end
end
local at = 57 + n * 16
local quotas = struct.unpack('<d', ARGV[1], at)
for j = 1, quotas do
  local key, amount = struct.unpack('<dd', ARGV[1], at + 8 + (j - 1) * 16)
  key = KEYS[key]
  local r = redis.call('HMGET', key, 'u', 'p')
  local used, pending = tonumber(r[1]), tonumber(r[2])
  if used then
    redis.call('HSET', key, 'u', string.format('%.0f', math.max(0, used - amount)))
  end
  if pending then
    redis.call('HSET', key, 'p', string.format('%.0f', math.max(0, pending - amount)))
  end
end
local after = at + 8 + quotas * 16
if #ARGV[1] >= after + 39 then
  local report, counted, ra, ta, tokens = struct.unpack('<ddddd', ARGV[1], after)
  local r = redis.call('HMGET', KEYS[report], 'ra', 'ta', 'pu', 'ps')
  if counted % 2 == 1 and tonumber(r[1]) == ra then
    redis.call('HINCRBY', KEYS[report], 'rr', 1)
  end
  if math.floor(counted / 2) % 2 == 1 and tonumber(r[2]) == ta then
    redis.call('HINCRBY', KEYS[report], 'tr', string.format('%.0f', tokens))
  end
  if counted >= 4 and r[3] then
    -- no report since the probe: it is owed again (one of silence: the silence holds again)
    redis.call('HDEL', KEYS[report], 'pu', 'ps')
    if r[4] then
      redis.call('HSET', KEYS[report], 'hr', string.format('%.17g', now - SILENCE_MS * unitsPerMs))
    else
      redis.call('HSET', KEYS[report], 'pn', '1')
    end
  end
end
if ARGV[n + 2] then
  local ko, mode, amount, before, after, seq, deadline, weight, class, turnEstimate =
    struct.unpack('<dddddddddd', ARGV[n + 2])
  if mode > 0 then
    local O = orders().open(KEYS[ko], ARGV[n + 3], string.format('%d', class), weight,
      turnEstimate, ARGV[n + 4] ~= '' and ARGV[n + 4] or nil)
    OR.undo(O, mode, amount, before == before and before or nil, after, seq, deadline)
  end
end
return {}
