-- Decides and charges an upstream on its own (acquire.lua's UPSTREAM), on a Redis Cluster whose
-- upstream's slot is not the caller's root's: run before acquire.lua decides the caller's levels
-- (its mode 2 or 3); a call those levels deny gives the charge back (refund.lua). Runs after
-- lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: the upstream's state key, its model-token window when it limits model tokens, its slots
--   when it limits concurrency, its report (see report.lua), its reservation counter when it
--   limits model tokens or concurrency
-- ARGV[1] after the three of lib.lua: the estimated model tokens, the first reservation id of this
--   store, the slot lease in time units (see acquire.lua), the least number the id may have (the
--   caller's root counter has reached the one below: 0 for none)
-- ARGV[2]: the upstream's level values (see lib.lua)
-- Returns, each a number as a string ('%.17g'): 1 if admitted (0: denied), the wait of a deny in
--   ms, the id numbered (a counter's number, without the base; 0: none), the time it ran, the
--   unit-cost calls it admits (after the call when admitted), ms until its window and model-token
--   window are empty, the model tokens it
--   admits (inf: unlimited), ms until its model-token window is empty, what the charge counted
--   down in the report (U.counted of lib.lua), the report's ra and ta then (0: none), then its
--   seven figures (BudgetTable.components); then, for a call with a turn, what undoes its count in
--   the order (OR.admitted's six values, refund.lua's ORDER; all 0 when it was not admitted).
-- ORDER: a call with a turn (acquire.lua's ORDER) carries after the floor five more numbers: 1, the
--   turn's weight, priority class and estimate, and the order's poll interval in ms; the
--   upstream's order key is the last of KEYS, ARGV[3] the turn's tenant (a hash) and ARGV[4] its
--   waiting call's id ('': none). The order gates and counts the call as in acquire.lua.

local estimate, idBase, slotLease, floor = struct.unpack('<dddd', ARGV[1], 25)
local limit, window, _, _, _, tpmLimit, tpmWindow, slotLimit, lease = struct.unpack(LEVEL, ARGV[2])
local k = 2
local U = {limit = limit, window = window, tpmLimit = tpmLimit, tpmWindow = tpmWindow,
  slotLimit = slotLimit, lease = lease, ks = KEYS[1], level = 1}
if tpmLimit > 0 then
  U.kt = KEYS[k]
  k = k + 1
end
if slotLimit > 0 then
  U.kc = KEYS[k]
  k = k + 1
end
U.kr = KEYS[k]
-- a call that waits in the upstream's order: its turn names its waiting call
U.waiting = #ARGV[1] >= 24 + 9 * 8 and struct.unpack('<d', ARGV[1], 57) == 1
  and ARGV[4] ~= nil and ARGV[4] ~= ''
upstreams().decide(U, estimate)
local O
if #ARGV[1] >= 24 + 9 * 8 and struct.unpack('<d', ARGV[1], 57) == 1 then
  local weight, class, turnEstimate, pollMs = struct.unpack('<dddd', ARGV[1], 65)
  local waiter = ARGV[4] ~= '' and ARGV[4] or nil
  O = orders().open(KEYS[#KEYS], ARGV[3], string.format('%d', class), weight, turnEstimate, waiter)
  if OR.anyWaiting(O) then
    local first = OR.first(O)
    if first and first == waiter then
      O.first = true
    elseif first and U.wait == 0 then
      U.wait = pollMs
      O.denied = true
    end
  end
end
local out = {0, U.wait, 0, now, UP.remaining(U), UP.resetMs(U), math.huge, 0, 0, U.ra or 0,
  U.ta or 0}
if U.wait == 0 then
  local id = 0
  if tpmLimit > 0 or slotLimit > 0 then
    local seq = KEYS[k + 1]
    id = nextId(seq)
    if id < floor then
      redis.call('SET', seq, string.format('%d', floor), 'KEEPTTL')
      id = floor
    end
  end
  out[1], out[3] = 1, id
  out[5], out[6] = UP.charge(U, id == 0 and 0 or idBase + id, estimate, slotLease)
  if U.L then
    T.save(U.L)
    out[7], out[8] = math.max(0, U.L.tpmLimit - U.L.tpmSum), T.resetMs(U.L)
  end
  out[9] = U.counted
end
if O and O.denied then
  out[5] = 0 -- none while the order keeps the call waiting
end
local f = {UP.figures(U)}
for j = 1, 7 do
  out[#out + 1] = f[j]
end
if O then
  local undo = {0, 0, 0 / 0, 0 / 0, 0, 0}
  if out[1] == 1 then
    undo = {OR.admitted(O)}
    undo[3] = undo[3] or 0 / 0
    undo[4] = undo[4] or 0 / 0
  end
  for j = 1, 6 do
    out[#out + 1] = undo[j]
  end
end
for j = 1, #out do
  out[j] = string.format('%.17g', out[j])
end
return out
