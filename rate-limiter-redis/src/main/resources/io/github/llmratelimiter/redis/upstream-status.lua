-- Reads where an upstream stands (UpstreamStatus.java), charging nothing: its window, model tokens
-- and slots under the limits in force (the configured ones, or the provider's lower ones from its
-- report), and what its report holds now. Runs after lib.lua, which reads the first three numbers
-- of ARGV[1]; writes nothing but the removal of expired slots.
--
-- KEYS: the upstream's state key, its model-token window when it limits model tokens, its slots
--   when it limits concurrency, its report (see report.lua)
-- ARGV[1]: the three numbers of lib.lua; ARGV[2]: the upstream's level values (see lib.lua)
-- Returns {requests limit, requests remaining, model-token limit, model tokens remaining, calls in
--   flight, reported requests remaining, reported model tokens remaining, ms closed for}, -1 for
--   what the upstream does not limit or no report holds.

local limit, window, _, _, _, tpmLimit, tpmWindow, slotLimit = struct.unpack(LEVEL, ARGV[2])
local k = 2
local tkey, ckey
if tpmLimit > 0 then
  tkey = KEYS[k]
  k = k + 1
end
if slotLimit > 0 then
  ckey = KEYS[k]
  k = k + 1
end
local r = redis.call('HMGET', KEYS[k], 'lr', 'lt', 'rr', 'ra', 'tr', 'ta', 'cu')
local lr, lt, rr, ra, tr, ta, cu = tonumber(r[1]), tonumber(r[2]), tonumber(r[3]),
  tonumber(r[4]), tonumber(r[5]), tonumber(r[6]), tonumber(r[7])
local out = {-1, -1, -1, -1, 0, -1, -1, 0}
if limit > 0 then
  if lr and lr < limit then
    limit = lr
  end
  local _, _, _, _, size = load(KEYS[1], limit, window, 0, 0)
  out[1], out[2] = limit, math.max(0, limit - size)
end
if tpmLimit > 0 then
  if lt and lt < tpmLimit then
    tpmLimit = lt
  end
  local L = {mkey = tkey, tpmLimit = tpmLimit, tpmWindow = tpmWindow}
  modelTokens().load(L)
  out[3], out[4] = tpmLimit, math.max(0, tpmLimit - L.tpmSum)
end
if ckey then
  out[5] = slots().load(ckey)
end
local closed = 0
if cu and cu > now then
  closed = ceilMs(cu - now)
end
if rr and ra and ra > now then
  out[6] = rr
  if rr < 1 then
    closed = math.max(closed, ceilMs(ra - now))
  end
end
if tr and ta and ta > now then
  out[7] = tr
  if tr <= 0 then
    closed = math.max(closed, ceilMs(ta - now))
  end
end
out[8] = closed
return out
