-- Hands Redis what one gateway instance's local fallback admitted for one root key while Redis did
-- not answer (a batch of its outage journal: OutageJournal), so that Redis's counters hold it
-- before this instance decides new calls of that root on Redis. Runs after lib.lua, which reads
-- the first three numbers of ARGV[1]. Idempotent: a batch is applied once, whatever the number of
-- times it is sent (its marker key remembers it, and its reply, for a day).
--
-- Per admitted call and per level it was admitted at:
--   the window gets an admission at the call's time (entries a whole window old are left out; the
--     log stays sorted: it is rewritten whole);
--   the bucket is charged the call's cost now (its refill since the call is not credited: at least
--     as strict as a charge at the call's time);
--   the model-token window gets an entry of the call's model tokens at the call's time, numbered
--     for the call;
--   the slots get the call's slot when the call still holds it: its cap is the call's time plus
--     the lease timeout, its expiry min(now + slot lease, cap), as acquire.lua takes a slot (a slot
--     whose cap has passed is not taken); it is then renewed and released like any other;
-- and each quota counter it charged gets the call's amount in `u`, its part in flight in `p`
-- (created with its time to live when new). Thresholds are not reported here.
--
-- KEYS: 1 the batch's marker, 2 the counter that numbers the root's reservations, then the state,
--   model-token, slots and quota keys the batch names (all under the root's hash tag)
-- ARGV[1] after the three of lib.lua: the first reservation id of this store, the slot lease in
--   time units, the marker's time to live in ms, D (the levels named), M (the calls); then per
--   level d: the index in KEYS of its state key, of its model-token window (0: none), of its
--   slots (0: none); then per call: its age (time units before now at which it was admitted), its
--   cost in bucket tokens, its model tokens, 1 when it is numbered an id (it holds model tokens or
--   a slot), 1 when it still holds its slots, its number of levels and their indexes d, its
--   number of quota charges and per charge the index in KEYS of the counter, the amount for `u`,
--   the amount for `p`, the counter's time to live in ms
-- ARGV[1 + d]: level d's limits (see lib.lua)
-- Returns {the ids numbered for the calls that are numbered one, in order, separated by spaces}:
--   the same reply when the batch was applied before.

local done = redis.call('GET', KEYS[1])
if done then
  return {done}
end
local idBase, slotLease, markerTtl, D, M = struct.unpack('<ddddd', ARGV[1], 25)
rewrite = true -- a log gains entries in its middle: commit writes it whole
local at = 65
local levels = {}
for d = 1, D do
  local s, t, c
  s, t, c, at = struct.unpack('<ddd', ARGV[1], at)
  local limit, window, capacity, refill, perUnit, tpmLimit, tpmWindow, slotLimit, lease =
    struct.unpack(LEVEL, ARGV[1 + d])
  levels[d] = {s = KEYS[s], t = t > 0 and KEYS[t], c = c > 0 and KEYS[c], limit = limit,
    window = window, capacity = capacity, refill = refill, perUnit = perUnit, tpmLimit = tpmLimit,
    tpmWindow = tpmWindow, lease = lease, times = {}, cost = 0, tokens = {}, slots = {}}
end
local ids = {}
for _ = 1, M do
  local age, cost, amount, numbered, holds, n
  age, cost, amount, numbered, holds, n, at = struct.unpack('<dddddd', ARGV[1], at)
  local time = now - math.max(0, math.floor(age)) -- whole units, as every entry of a log
  local id = 0
  if numbered == 1 then
    id = idBase + nextId(KEYS[2])
    ids[#ids + 1] = string.format('%.17g', id)
  end
  for _ = 1, n do
    local d
    d, at = struct.unpack('<d', ARGV[1], at)
    local L = levels[d]
    if L.limit > 0 and time > now - L.window then
      L.times[#L.times + 1] = time
    end
    L.cost = L.cost + cost
    if L.t and id ~= 0 and time > now - L.tpmWindow then
      L.tokens[#L.tokens + 1] = {time, id, amount}
    end
    if L.c and id ~= 0 and holds == 1 and time + L.lease > now then
      L.slots[#L.slots + 1] = {id, time + L.lease}
    end
  end
  local q
  q, at = struct.unpack('<d', ARGV[1], at)
  for _ = 1, q do
    local key, used, pending, ttl
    key, used, pending, ttl, at = struct.unpack('<dddd', ARGV[1], at)
    key = KEYS[key]
    if used > 0 then
      local u = redis.call('HINCRBY', key, 'u', string.format('%.0f', used))
      if pending > 0 then
        redis.call('HINCRBY', key, 'p', string.format('%.0f', pending))
      end
      if u == used then -- a new counter
        redis.call('PEXPIRE', key, string.format('%.0f', math.max(1, ttl)))
      end
    end
  end
end

for d = 1, D do
  local L = levels[d]
  if #L.times > 0 or (L.capacity > 0 and L.cost > 0) then
    local s, width, base, first, size, newest, tokens, rat, dirty, mark =
      load(L.s, L.limit, L.window, L.capacity, L.perUnit)
    if #L.times > 0 then
      local times = L.times
      for j = 0, size - 1 do
        times[#times + 1] = nth(s, width, base, first, j)
      end
      table.sort(times)
      base = times[1]
      newest = times[#times]
      size = #times
      width = (L.window > 2147483648 or newest - base > 4294967295) and 8 or 4
      local fmt = width == 4 and '<I4' or '<d'
      for j = 1, size do
        times[j] = struct.pack(fmt, times[j] - base)
      end
      s = struct.pack('<BdddI4d', 16 + width, tokens, rat, base, 0, mark or 0)
        .. table.concat(times)
      first = 0
      dirty = true
    end
    commit(L.s, s, width, base, first, size, newest, tokens, rat, dirty, L.limit, L.window,
      L.capacity, L.refill, false, L.capacity > 0 and L.cost or 0, mark)
  end
  if #L.tokens > 0 then
    local T = modelTokens()
    local W = {mkey = L.t, tpmLimit = L.tpmLimit, tpmWindow = L.tpmWindow}
    T.load(W)
    local entries = L.tokens
    local live = T.flat(W)
    for j = 0, W.tpmSize - 1 do
      local t, eid, amount = struct.unpack('<ddd', live, 1 + j * 24)
      entries[#entries + 1] = {t, eid, amount}
    end
    table.sort(entries, function(a, b)
      return a[1] < b[1] or a[1] == b[1] and a[2] < b[2]
    end)
    local body, sum = {}, 0
    for j, e in ipairs(entries) do
      body[j] = struct.pack('<ddd', e[1], e[2], e[3])
      sum = sum + e[3]
    end
    W.body = table.concat(body)
    W.tpmSum = sum
    W.tpmSize = #entries
    W.tpmNewest = entries[#entries][1]
    W.tpmDirty = true
    T.save(W)
  end
  if #L.slots > 0 then
    local C = slots()
    C.load(L.c)
    for _, slot in ipairs(L.slots) do
      local cap = slot[2]
      local expiry = cap
      if slotLease > 0 and now + slotLease < cap then
        expiry = now + slotLease
      end
      redis.call('ZADD', L.c, expiry, C.member(slot[1], cap))
    end
    local last = tonumber(redis.call('ZRANGE', L.c, -1, -1, 'WITHSCORES')[2])
    redis.call('PEXPIRE', L.c, math.max(ceilMs(last - now) + 1, minTtlMs))
  end
end
local reply = table.concat(ids, ' ')
redis.call('SET', KEYS[1], reply, 'PX', string.format('%.0f', markerTtl))
return {reply}
