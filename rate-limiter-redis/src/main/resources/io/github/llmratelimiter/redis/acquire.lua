-- One composed decision over N levels (a hierarchy; N = 1 for a single budget), atomically
-- (InMemoryStore.decide), optionally reserving model tokens and slots (InMemoryStore.reserve).
-- Runs after lib.lua, which reads the first three numbers of ARGV[1].
--
-- KEYS: per level, root first, its state key, then its model-token window when it limits
--   model tokens, then its slots when it limits concurrency; all share one hash tag (one
--   slot on Redis Cluster); last, only when the first reservation id is not 0, the counter that
--   numbers this root's reservations; with quotas, between the two: every quota's counter for
--   the current period (see ARGV[2 + N]), level after level; after the counters (or the levels),
--   the monitoring keys when ARGV[1] holds their numbers (see lib.lua's monitoring)
-- ARGV[1] after the three of lib.lua: the call's cost in bucket tokens; 1 sequential (the slots,
--   the window, the bucket, the model tokens, level after level; what ran before a deny stays
--   charged) or 0 reserve-then-commit (all checked first, all charged or none); N, the number of
--   levels; the estimated model tokens (0 for a plain acquire); the first reservation id of this
--   store (0: no reservation; one is numbered only when some level limits model tokens or
--   concurrency); the deadline: the call's caller stops waiting at this time (in the script's
--   time units), so a call that runs later charges nothing and replies EXPIRED (0: no deadline);
--   the slot lease in time units: a slot taken expires this long after it was taken or last
--   renewed (renew.lua), and at its lease timeout at the latest (0: at its lease timeout); then,
--   optionally, the monitoring numbers (see lib.lua's monitoring), and after them 1 when the
--   reply ends with the levels' figures (0: it does not); then, for a call to an upstream (see
--   UPSTREAM below), fifteen more
-- ARGV[1 + i]: level i (see lib.lua)
-- ARGV[2 + N]: only when a level has quotas (QuotaFrame.acquireArg), little-endian doubles: per
--   level, its number of quotas, then per quota the index in KEYS of its counter (a hash: u, what
--   was used in the period, settled amounts and the estimates of the calls in flight; p, those
--   estimates in flight; f<percent>, set once that threshold was reported), the call's amount
--   in its unit, the part of it in flight until settled (the amount of model tokens or cost; 0 for
--   a request, used at once), its limit, 1 if enforced (0: a shadow quota, which never denies), ms
--   until its period ends, ms to wait when only the estimates in flight keep the amount from
--   fitting (the settled use, u - p, leaves room for it), the counter's time to live in ms (until
--   a day after its period ends, on the caller's clock: a counter outlives its period for late
--   settlements), its number of thresholds, then per threshold the amount that crosses it and its
--   percentage. Periods are computed by the caller from its wall clock, never here. The quotas run
--   last in a level (InMemoryStore.decide): a level's other components admitted before its quotas
--   are checked; a quota that denies is not charged (QUOTA_EXCEEDED, retryable after the longest
--   wait of the level's denying enforced quotas: each one's period end, or its wait for the
--   estimates in flight). A charge adds the amount to u and its part in flight to p
--   (reconcile.lua moves it from p to what was used: QuotaBook.Counter). A call with quotas
--   numbers a reservation id when it reserves.
-- Returns one string: eleven little-endian doubles, struct '<ddddddddddd', then the reason's name
--   (ASCII): allowed (1|0), level (1-based), remaining, retryAfterMs, resetAfterMs, retryable
--   (1|0), reservation id, remaining model tokens (inf: no level limits them), model-token reset
--   ms, now, the id numbered for the call (0: none; in sequential composition a deny after levels
--   that reserved model tokens keeps their entries under it); the reason EXPIRED for a call that
--   ran after its deadline. (One bulk string: Redis 6.2 writes a script's array reply through a
--   deferred length, which costs an allocation and a separate write per reply when pipelined.)
--   With quotas, the reason is followed by '|' and per quota, in ARGV[2 + N]'s order, doubles:
--   used after the decision, the estimates in flight then, 1 if its amount did not fit, the number
--   of thresholds this decision reported, their percentages (each reported once per counter: the
--   first decision to find the settled use, u - p, with the call's own amount when it is
--   admitted, at or above its amount marks it: QuotaCall.statuses).
--   Last, after all of that (not after EXPIRED), when ARGV[1] asks for them: per level, root
--   first, seven doubles, what each
--   component admits after the decision (BudgetTable.components; math.huge remaining and 0 ms for
--   a component the level does not have): the requests its window admits, ms until the window is
--   empty, the calls its bucket pays for, ms until it is full, the free slots, the model tokens
--   its model-token window admits, ms until that window is empty.
--
-- UPSTREAM: a call to an upstream (a provider account every caller shares: Upstream.java) carries
-- after the figures' flag, in ARGV[1], fifteen numbers: the mode (0: no upstream), then for mode 1
-- (the upstream is decided here) the upstream's nine level values (as a level's, without a
-- bucket), and the indexes in KEYS of its state key, its model-token window (0: none), its slots
-- (0: none), its report (a hash of report.lua: lr and lt the provider's lower limits of requests
-- and model tokens, rr and tr the requests and model tokens left until ra and ta, cu the time it
-- is closed until) and its reservation counter (0: none, when it limits neither model tokens nor
-- concurrency). Its keys carry the upstream's own hash tag. The N levels are the caller's and are
-- decided first, exactly as without an upstream; the upstream decides only a call they all admit:
-- its window counts 1 (under the lower of its limit and the reported one), its model tokens the
-- estimate, its slots one, and its report denies while closed, or while the requests or model
-- tokens it left are fewer than the call needs (or none). An upstream deny replies UPSTREAM_LIMIT
-- as level N + 1, retryable after the longest wait of what denies it, remaining the least that
-- any level and the upstream admit, reset the later of that wait and the upstream's windows
-- emptying (InMemoryStore.decideWithUpstream), and charges nothing anywhere, whatever the
-- composition. An admitted call is charged at the upstream too (the report's counts go down; the
-- requests they leave cap what the upstream admits) and its reply ends with N + 1 levels'
-- figures. A reservation id numbered for such a call is past
-- every id of both the root's counter and the upstream's, and both counters are moved to it, so
-- it is unique among the entries of the root's keys and of the upstream's.
-- On a Redis Cluster where the upstream's slot is not the root's, upstream-acquire.lua has decided
-- the upstream on its own slot first, and this script decides the caller's levels: mode 2, the
-- upstream admitted and charged the call, and the next number is the id it numbered (0: none),
-- which becomes this call's id unless the root's counter has reached it: then nothing is charged
-- and the reason is CONFLICT, the numbered id the root's counter (the caller gives the upstream's
-- charge back and tries again past it); mode 3, the upstream denied, and the next number is its
-- wait: the reply is as in mode 1 when the upstream denies. Neither has the upstream's figures.
--
-- ORDER: a call to an upstream decided here (mode 1) may carry a turn in the fair order of the
-- calls waiting for the upstream (UpstreamTurn; lib.lua's OR): after the fifteen UPSTREAM numbers,
-- six more: 1 for a turn (0: none; the order is then neither read nor written), the index in KEYS
-- of the upstream's order key, the turn's weight, priority class and estimate, and the ms a call
-- the order denies waits when the upstream has room (the order's poll interval); ARGV[2 + N] is
-- then the quota argument or '' (none), ARGV[3 + N] the turn's tenant (a hash) and ARGV[4 + N] its
-- waiting call's id ('': none). While calls wait (the order's count exists: one EXISTS when none
-- does), the upstream admits only the turn that names the first waiting call (after the calls
-- whose deadline passed are taken out); any other call with a turn is an upstream deny, wait the
-- upstream's own or else the poll interval, and charges nothing when every level admits. An
-- admitted call with a turn is counted in its tenant's counter (OR.admitted), and a waiting call
-- admitted leaves the order, in this same script.
--
-- Slots are checked first in each level (a deny there charges nothing at the level) and taken
-- only once the whole call is admitted, at every level that limits concurrency: a denied call
-- never runs, so it would never give a slot back.
--
-- The common case, one level in sequential mode without model tokens, runs straight through:
-- one GET and one SET, no table per level.

local cost, sequential, n, estimate, idBase, deadline, slotLease =
  struct.unpack('<ddddddd', ARGV[1], 25)
if deadline > 0 and now > deadline then
  return struct.pack('<ddddddddddd', 0, 1, 0, 0, 0, 0, 0, 0, 0, now, 0) .. 'EXPIRED'
end
sequential = sequential == 1
-- monitoring (lib.lua): the index in KEYS of the first monitoring key (0: none kept)
local mfirst = #ARGV[1] > 80 and struct.unpack('<d', ARGV[1], 81) or 0

-- the quotas, per level (only when a level has one: otherwise Q stays nil and costs nothing)
local Q, quotaCheck, quotaCharge, quotaReply
if ARGV[n + 2] and #ARGV[n + 2] > 0 then
  local qarg = ARGV[n + 2]
  local v = {struct.unpack('<' .. string.rep('d', #qarg / 8), qarg)}
  local p = 1
  local top = mfirst -- each level's spenders sets follow its two monitoring keys
  Q = {}
  for i = 1, n do
    local qs = {}
    local m = v[p]
    p = p + 1
    top = top + 2
    for j = 1, m do
      local q = {key = KEYS[v[p]], amount = v[p + 1], held = v[p + 2], limit = v[p + 3],
        enforce = v[p + 4] == 1, retry = v[p + 5], inflight = v[p + 6], ttl = v[p + 7],
        tamount = {}, tpct = {}, exceeded = false}
      local fields = {'u', 'p'}
      local tc = v[p + 8]
      p = p + 9
      for t = 1, tc do
        q.tamount[t], q.tpct[t] = v[p], v[p + 1]
        fields[t + 2] = 'f' .. string.format('%d', v[p + 1])
        p = p + 2
      end
      if mfirst > 0 then
        q.top = KEYS[top]
        top = top + 1
      end
      local r = redis.call('HMGET', q.key, unpack(fields))
      q.used = tonumber(r[1]) or 0
      q.pending = tonumber(r[2]) or 0
      q.fired = r -- r[t + 2]: threshold t was reported (false: not yet)
      qs[j] = q
    end
    Q[i] = qs
  end
  -- checks level i's quotas; returns the longest wait among its enforced quotas whose amount does
  -- not fit (0: none denies): the ms until its period ends, or its wait for the estimates in
  -- flight when the settled use leaves room for the amount (QuotaCall.retryMs)
  quotaCheck = function(i)
    local wait = 0
    for _, q in ipairs(Q[i]) do
      q.exceeded = q.used > q.limit - q.amount
      if q.exceeded and q.enforce then
        if math.max(0, q.used - q.pending) > q.limit - q.amount then
          wait = math.max(wait, q.retry)
        else
          wait = math.max(wait, q.inflight)
        end
      end
    end
    return wait
  end
  -- charges level i's quotas with the call's amounts, their estimates in flight until settled
  quotaCharge = function(i)
    for _, q in ipairs(Q[i]) do
      if q.amount > 0 then
        q.used = redis.call('HINCRBY', q.key, 'u', string.format('%.0f', q.amount))
        if q.held > 0 then
          q.pending = redis.call('HINCRBY', q.key, 'p', string.format('%.0f', q.held))
        end
        if q.used == q.amount then -- a new counter
          redis.call('PEXPIRE', q.key, string.format('%.0f', q.ttl))
        end
        if q.top then
          monitoring().spent(q)
        end
      end
    end
  end
  -- reports each threshold the settled use (with the call's own amount when it is admitted) now
  -- reaches and never reported in the period; the reply's quota part
  quotaReply = function(admitted)
    local out = {}
    for i = 1, n do
      for _, q in ipairs(Q[i]) do
        out[#out + 1] = q.used
        out[#out + 1] = q.pending
        out[#out + 1] = q.exceeded and 1 or 0
        local at = #out + 1
        out[at] = 0
        local reached = math.min(q.used, math.max(0, q.used - q.pending)
          + (admitted and q.amount or 0))
        for t = 1, #q.tamount do
          if not q.fired[t + 2] and reached >= q.tamount[t] then
            redis.call('HSET', q.key, 'f' .. string.format('%d', q.tpct[t]), '1')
            out[#out + 1] = q.tpct[t]
            out[at] = out[at] + 1
          end
        end
      end
    end
    return '|' .. struct.pack('<' .. string.rep('d', #out), unpack(out))
  end
end

-- The use of a level as the call leaves it (KeySnapshot.utilization: window, bucket, model
-- tokens with L, slots with h), admitted (after an admission: the level was charged, in
-- sequential composition even when a later level denies) or not (as found), and the monitoring
-- mark of that use in level i's period (lib.lua's monitoring).
local function usage(i, admitted, limit, size, capacity, tokens, L, h)
  local use, a = 0, admitted and 1 or 0
  if limit > 0 then
    use = math.min(1, (size + a) / limit)
  end
  if capacity > 0 then
    use = math.max(use, 1 - math.max(0, tokens - a * cost) / capacity)
  end
  if L then
    use = math.max(use, math.min(1, (L.tpmSum + a * estimate) / L.tpmLimit))
  end
  if h then
    use = math.max(use, math.min(1, (h[2] + a) / h[3]))
  end
  return use, (struct.unpack('<d', ARGV[1], 97 + (n + i - 1) * 8) + 1) * 128
    + math.floor(use * 100)
end

-- per level, seven figures: each component on its own (the reply's last part); sized for one
-- level, the common case, so that filling it allocates nothing more
local parts = {0, 0, 0, 0, 0, 0, 0}

-- the upstream (UPSTREAM above): read and decided before anything is charged; on a Cluster whose
-- upstream's slot is not the root's, decided by upstream-acquire.lua before this call (modes 2, 3)
local U, forced
if #ARGV[1] >= 104 + 16 * n + 15 * 8 then
  local mode, limit, window, _, _, _, tpmLimit, tpmWindow, slotLimit, lease, ks, kt, kc, kr,
    kseq = struct.unpack('<' .. string.rep('d', 15), ARGV[1], 105 + 16 * n)
  if mode == 1 then
    U = {limit = limit, window = window, tpmLimit = tpmLimit, tpmWindow = tpmWindow,
      slotLimit = slotLimit, lease = lease, ks = KEYS[ks], kt = KEYS[kt], kc = KEYS[kc],
      kr = KEYS[kr], kseq = kseq, level = n + 1}
    -- a call that waits in the upstream's order: its turn names its waiting call
    U.waiting = #ARGV[1] >= 104 + 16 * n + 21 * 8
      and struct.unpack('<d', ARGV[1], 105 + 16 * n + 15 * 8) == 1
      and ARGV[n + 4] ~= nil and ARGV[n + 4] ~= ''
    upstreams().decide(U, estimate)
    if #ARGV[1] >= 104 + 16 * n + 21 * 8 then
      local turn, ko, weight, class, turnEstimate, pollMs =
        struct.unpack('<dddddd', ARGV[1], 105 + 16 * n + 15 * 8)
      if turn == 1 then
        local waiter = ARGV[n + 4] ~= '' and ARGV[n + 4] or nil
        U.O = orders().open(KEYS[ko], ARGV[n + 3], string.format('%d', class), weight,
          turnEstimate, waiter)
        if OR.anyWaiting(U.O) then
          local first = OR.first(U.O)
          if first and first == waiter then
            U.O.first = true
          elseif first and U.wait == 0 then
            U.O.denied = true
            U.wait = pollMs
          end
        end
      end
    end
  elseif mode == 2 then
    forced = limit -- the id upstream-acquire.lua numbered (0: none)
  elseif mode == 3 then
    U = {wait = limit, outside = true} -- upstream-acquire.lua denied, this long
  end
end

-- The figures the reply ends with, when asked for: 7 per level, and the upstream's after them.
local function figures()
  if #ARGV[1] > 96 + 16 * n and struct.unpack('<d', ARGV[1], 97 + 16 * n) == 1 then
    local count = 7 * n
    if U and not U.outside then
      local j = 7 * (n + 1)
      parts[j - 6], parts[j - 5], parts[j - 4], parts[j - 3], parts[j - 2], parts[j - 1],
        parts[j] = UP.figures(U)
      count = count + 7
    end
    return struct.pack('<' .. string.rep('d', count), unpack(parts, 1, count))
  end
  return ''
end

-- An upstream that denies: the decision is the caller's own when one of its levels denies (run
-- below as without an upstream); when every level admits, UPSTREAM_LIMIT, with nothing charged.
-- The same checks as the levels' below, each state only read.
if U and U.wait > 0 then
  local admits, k = true, 1
  local tpmRemaining, tpmReset = math.huge, 0
  -- what every level admits, unit-cost; none while the order keeps the call waiting
  local left = U.outside and math.huge or U.O and U.O.denied and 0 or UP.remaining(U)
  for i = 1, n do
    local limit, window, capacity, refill, perUnit, tpmLimit, tpmWindow, slotLimit =
      struct.unpack(LEVEL, ARGV[1 + i])
    local key = KEYS[k]
    k = k + 1
    local s, width, base, first, size, newest, tokens, at = load(key, limit, window, capacity,
      perUnit)
    if limit > 0 and size >= limit or capacity > 0 and tokens + cost * 1e-9 < cost then
      admits = false
    end
    local j, r, _ = 7 * i, nil, nil
    r, _, parts[j - 6], parts[j - 5], parts[j - 4], parts[j - 3] = commit(key, s, width, base,
      first, size, newest, tokens, at, nil, limit, window, capacity, refill, false, 0)
    parts[j - 2], parts[j - 1], parts[j] = math.huge, math.huge, 0
    if tpmLimit > 0 then
      local L = {mkey = KEYS[k], tpmLimit = tpmLimit, tpmWindow = tpmWindow}
      k = k + 1
      modelTokens().load(L)
      if L.tpmSum + estimate > tpmLimit then
        admits = false
      end
      parts[j - 1], parts[j] = math.max(0, tpmLimit - L.tpmSum), T.resetMs(L)
      tpmRemaining = math.min(tpmRemaining, parts[j - 1])
      tpmReset = math.max(tpmReset, parts[j])
    end
    if slotLimit > 0 then
      local h = slots().load(KEYS[k])
      k = k + 1
      if h >= slotLimit then
        admits = false
      end
      parts[j - 2] = math.max(0, slotLimit - h)
      r = math.min(r, parts[j - 2])
    end
    left = math.min(left, r)
    if Q and Q[i][1] and quotaCheck(i) > 0 then
      admits = false
    end
  end
  if admits then
    local reason = 'UPSTREAM_LIMIT'
    if Q then
      reason = reason .. quotaReply(false)
    end
    if U.L then -- (an upstream decided here)
      tpmRemaining = math.min(tpmRemaining, math.max(0, U.L.tpmLimit - U.L.tpmSum))
      tpmReset = math.max(tpmReset, T.resetMs(U.L))
    end
    local ms = U.outside and U.wait or math.max(U.wait, UP.resetMs(U))
    return struct.pack('<ddddddddddd', 0, n + 1, left, U.wait, ms, 1, 0, tpmRemaining,
      tpmReset, now, 0) .. reason .. figures()
  end
end

local id = 0
if forced and forced ~= 0 then
  -- the id upstream-acquire.lua numbered, unless this root's counter has reached it
  local c = tonumber(redis.call('GET', KEYS[#KEYS]))
  if c and c >= forced then
    return struct.pack('<ddddddddddd', 0, 1, 0, 0, 0, 0, 0, 0, 0, now, c) .. 'CONFLICT'
  end
  if c then
    redis.call('SET', KEYS[#KEYS], string.format('%d', forced), 'KEEPTTL')
  else
    redis.call('SET', KEYS[#KEYS], string.format('%d', forced), 'PX', '86400000')
  end
  id = idBase + forced
elseif idBase ~= 0 and Q then
  id = idBase + nextId(KEYS[#KEYS])
elseif idBase ~= 0 then
  for i = 1, n do
    local _, _, _, _, _, tpmLimit, _, slotLimit = struct.unpack(LEVEL, ARGV[1 + i])
    if tpmLimit > 0 or slotLimit > 0 then
      id = idBase + nextId(KEYS[#KEYS])
      break
    end
  end
  if id == 0 and U and not U.outside and U.kseq > 0 then
    id = idBase + nextId(KEYS[#KEYS])
  end
end
if id ~= 0 and U and not U.outside and U.kseq > 0 then
  -- past every id of the upstream's counter too, and both counters moved to it
  local c, u = id - idBase, nextId(KEYS[U.kseq])
  if u > c then
    redis.call('SET', KEYS[#KEYS], string.format('%d', u), 'KEEPTTL')
    id = idBase + u
  elseif c > u then
    redis.call('SET', KEYS[U.kseq], string.format('%d', c), 'KEEPTTL')
  end
end

-- Every level, root first: loaded and checked. Sequential: charged up to its own deny and written
-- on the spot; a level after a deny is only read (what it has left counts in the reply's
-- remaining, as BudgetTable.remainingAt). Reserve-then-commit: kept (in pending) until every level
-- is checked, then all charged or none; a deny reports the component that binds over all levels
-- (InMemoryStore.bindingDeny): one that never clears (retry 0), else the longest wait, the first
-- in order on a tie. Either way what every level has left is gathered in left and counted once the
-- call is decided, with the slots it took.
local denied, reason, retry, ms -- the deciding level, its reason, retry and reset
local reset = 0
local left = {0} -- per level, the unit-cost calls its window and bucket admit (sized for one)
-- created on first use (most calls have one level, in sequential mode, without model tokens or
-- slots):
local pending -- per level, its loaded state (reserve-then-commit)
local tpm -- the levels that limit model tokens (tables for the model-token functions)
local held -- per level that limits concurrency, {its slots key, slots held, limit, lease}
local k = 1
local mk = mfirst -- the index in KEYS of level i's monitoring keys
for i = 1, n do
  local limit, window, capacity, refill, perUnit, tpmLimit, tpmWindow, slotLimit, lease =
    struct.unpack(LEVEL, ARGV[1 + i])
  local key = KEYS[k]
  local L
  k = k + 1
  if tpmLimit > 0 then
    L = {mkey = KEYS[k], tpmLimit = tpmLimit, tpmWindow = tpmWindow, level = i}
    k = k + 1
    modelTokens().load(L) -- even a level a deny never reached: to report what is left now
    tpm = tpm or {}
    tpm[#tpm + 1] = L
  end
  local taken = false -- the slots all held (BudgetTable.slotsFull)
  if slotLimit > 0 then
    local h = {KEYS[k], slots().load(KEYS[k]), slotLimit, lease}
    k = k + 1
    held = held or {}
    held[i] = h
    taken = h[2] >= slotLimit
  end
  local s, width, base, first, size, newest, tokens, at, dirty, mark =
    load(key, limit, window, capacity, perUnit)
  local use, m = 0, mark -- its use and mark as the call leaves it (when monitoring)
  local full = limit > 0 and size >= limit
  local short = capacity > 0 and tokens + cost * 1e-9 < cost -- BudgetTable.bucketShort
  local over = L and L.tpmSum + estimate > L.tpmLimit
  if sequential and denied then
    local j, _ = 7 * i, nil
    if mfirst > 0 then
      use, m = usage(i, false, limit, size, capacity, tokens, L, held and held[i])
    end
    left[i], _, parts[j - 6], parts[j - 5], parts[j - 4], parts[j - 3] = commit(key, s, width,
      base, first, size, newest, tokens, at, nil, limit, window, capacity, refill, false, 0, m)
      -- read, not written
    if m ~= mark then
      monitoring().record(i, mk, key, use, m, nil, mark)
    end
  elseif sequential then
    local c = 0 -- the first component that denies: 4 slots, 1 window, 2 bucket, 3 model tokens,
    -- 5 quotas (last: the level's other components stay charged)
    local qwait = 0
    if taken then
      c = 4
    elseif full then
      c = 1
    elseif short then
      c = 2
    elseif over then
      c = 3
    elseif Q and Q[i][1] then
      qwait = quotaCheck(i)
      if qwait > 0 then
        c = 5
      else
        quotaCharge(i)
      end
    end
    -- a window that admitted stays charged whatever denies after it (sequential order)
    local j = 7 * i
    local remaining, levelMs, written
    if mfirst > 0 then -- as admitted unless it denies
      use, m = usage(i, c == 0, limit, size, capacity, tokens, L, held and held[i])
    end
    remaining, levelMs, parts[j - 6], parts[j - 5], parts[j - 4], parts[j - 3], written =
      commit(key, s, width, base, first, size, newest, tokens, at, dirty,
      limit, window, capacity, refill, (c == 0 or c == 2 or c == 3 or c == 5) and limit > 0,
      (c == 0 or c == 3 or c == 5) and capacity > 0 and cost or 0, m)
    if m ~= mark then
      monitoring().record(i, mk, key, use, m, written, mark)
    end
    left[i] = remaining
    if L then
      if (c == 0 or c == 5) and id ~= 0 then
        T.append(L, id, estimate)
      end
      levelMs = math.max(levelMs, T.resetMs(L))
    end
    if c == 4 then
      reason, retry = 'CONCURRENCY_LIMIT', C.retryMs(held[i][1], held[i][2], slotLimit)
    elseif c == 1 then
      -- all but limit - 1 admissions must leave (more than a smaller limit: BudgetTable.windowMs)
      reason, retry = 'RPM_LIMIT',
        math.max(1, ceilMs(nth(s, width, base, first, size - limit) + window - now))
    elseif c == 2 then
      -- a bucket that never refills: not retryable (retry 0 must never read as "retry now")
      reason, retry = 'BURST_LIMIT', refill > 0
        and tokensMs(refill, perUnit, capacity, cost, tokens, at) or 0
    elseif c == 3 then
      reason, retry = 'TPM_LIMIT', T.retryMs(L, estimate)
    elseif c == 5 then
      reason, retry = 'QUOTA_EXCEEDED', qwait
    end
    if c > 0 then
      denied, ms = i, levelMs
    end
    reset = math.max(reset, levelMs)
  else
    pending = pending or {}
    pending[i] = {key, s, width, base, first, size, newest, tokens, at, dirty, limit, window,
      capacity, refill, L, mark, mk}
    -- this level's binding component (BudgetTable.binding): a bucket that never refills, else
    -- the longest wait, the first in order (slots, window, bucket, model tokens) on a tie
    local c, wait
    if taken then
      c, wait = 'CONCURRENCY_LIMIT', C.retryMs(held[i][1], held[i][2], slotLimit)
    end
    if full then
      local w = math.max(1, ceilMs(nth(s, width, base, first, size - limit) + window - now))
      if not c or w > wait then
        c, wait = 'RPM_LIMIT', w
      end
    end
    if short then
      if refill == 0 then
        c, wait = 'BURST_LIMIT', 0
      else
        local w = tokensMs(refill, perUnit, capacity, cost, tokens, at)
        if not c or w > wait then
          c, wait = 'BURST_LIMIT', w
        end
      end
    end
    if over and wait ~= 0 then
      local w = T.retryMs(L, estimate)
      if not c or w > wait then
        c, wait = 'TPM_LIMIT', w
      end
    end
    if Q and Q[i][1] then
      -- every level's quotas are checked; their period's end: a quota always clears
      local w = quotaCheck(i)
      if w > 0 and (not c or wait ~= 0 and w > wait) then
        c, wait = 'QUOTA_EXCEEDED', w
      end
    end
    if c and (not denied or wait == 0 and retry ~= 0 or retry ~= 0 and wait > retry) then
      denied, reason, retry = i, c, wait
    end
  end
  mk = mk + 2 + (Q and #Q[i] or 0)
end
if not sequential then
  -- all charged, or none: each level is written as normalized, and charged when nothing denied
  local charge = not denied
  for i = 1, n do
    local p = pending[i]
    local L = p[15]
    local j = 7 * i
    local remaining, levelMs, written
    local use, m = 0, p[16]
    if mfirst > 0 then
      use, m = usage(i, charge, p[11], p[6], p[13], p[8], L, held and held[i])
    end
    remaining, levelMs, parts[j - 6], parts[j - 5], parts[j - 4], parts[j - 3], written =
      commit(p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13],
      p[14], charge and p[11] > 0, charge and p[13] > 0 and cost or 0, m)
    if m ~= p[16] then
      monitoring().record(i, p[17], p[1], use, m, written, p[16])
    end
    if L then
      if charge and id ~= 0 then
        T.append(L, id, estimate)
      end
      levelMs = math.max(levelMs, T.resetMs(L))
    end
    left[i] = remaining
    reset = math.max(reset, levelMs)
    if i == denied then
      ms = levelMs
    end
  end
  if charge and Q then
    for i = 1, n do
      quotaCharge(i)
    end
  end
end
-- an admitted call takes its slots; then the least any level has left, the first such level
local best, binding = math.huge, 1
for i = 1, n do
  local remaining = left[i]
  local h = held and held[i]
  if h then
    if not denied and id ~= 0 then
      C.take(h[1], id, h[4], slotLease)
      h[2] = h[2] + 1
    end
    remaining = math.min(remaining, math.max(0, h[3] - h[2]))
  end
  parts[7 * i - 2], parts[7 * i - 1], parts[7 * i] = h and math.max(0, h[3] - h[2]) or math.huge,
    math.huge, 0
  if remaining < best then
    best, binding = remaining, i
  end
end
-- an admitted call is charged at its upstream, which counts in what the call has left
if U and not U.outside and not denied then
  local remaining, levelMs = UP.charge(U, id, estimate, slotLease)
  if U.O then
    OR.admitted(U.O)
  end
  if U.L then
    tpm = tpm or {}
    tpm[#tpm + 1] = U.L
  end
  reset = math.max(reset, levelMs)
  if remaining < best then
    best, binding = remaining, n + 1
  end
end
-- what is left of the model-token windows now, over every level that limits them
local tpmRemaining, tpmReset = math.huge, 0
for j = 1, tpm and #tpm or 0 do
  local L = tpm[j]
  T.save(L)
  tpmRemaining = math.min(tpmRemaining, math.max(0, L.tpmLimit - L.tpmSum))
  tpmReset = math.max(tpmReset, T.resetMs(L))
  parts[7 * L.level - 1], parts[7 * L.level] = math.max(0, L.tpmLimit - L.tpmSum), T.resetMs(L)
end
local components = figures()
if not denied then
  return struct.pack('<ddddddddddd', 1, binding, best, 0, reset, 1, id, tpmRemaining, tpmReset,
    now, id) .. (Q and 'OK' .. quotaReply(true) or 'OK') .. components
end
if reason == 'QUOTA_EXCEEDED' then
  ms = math.max(ms, retry)
  reason = reason .. quotaReply(false)
elseif Q then
  reason = reason .. quotaReply(false)
end
return struct.pack('<ddddddddddd', 0, denied, best, retry, ms, retry > 0 and 1 or 0, 0,
  tpmRemaining, tpmReset, now, id) .. reason .. components
