-- Shared part of every script of this store: the Java side prepends it to each algorithm's file
-- (acquire.lua, reconcile.lua, inspect.lua) before loading, so each loaded script is
-- self-contained. Redis 6.2 runs a script's whole body on every call, so every function defined
-- here is created anew per call: this part defines only the few that every script needs, and the
-- model-token ones only when a level limits model tokens (modelTokens() below), and the
-- monitoring ones only when acquire.lua keeps the monitoring structures (monitoring() at the end).
--
-- The arithmetic mirrors the in-memory store of rate-limiter-core (BudgetTable, KeyEntry) operation
-- for operation, in IEEE doubles like Java, so that both stores give the same decisions.
--
-- State of one level (one budget applied to one key), in keys sharing the call's hash tag:
--   s  the window log and the bucket, one string (layout 2; absent means fresh):
--        a header struct.pack('<BdddI4d', 16 + width, tokens, refilledAt, base, first, mark), 37
--        bytes: 16 plus the width of a log entry (4 or 8 bytes), the bucket's tokens as of
--        refilledAt (unused without a bucket), the time the log's entries count from, the index of
--        the first entry still in the window (0 unless the log is large: see commit), the
--        monitoring mark (acquire.lua: the period and whole percent of use the level's busiest set
--        last recorded for it; 0: none);
--        then the admissions, oldest first, each its time minus base: '<I4' (width 4, used while
--        the window is at most 2^31 time units, rebased when an offset would pass 2^32 - 1) or
--        '<d' (width 8, exact below 2^53). Entries a whole window old leave from the head.
--        A header of 29 bytes without the mark, its first byte the width itself (4 or 8), is read
--        as a mark of 0 and written back in this form (rewrite below).
--   t  the model-token (TPM) window, one string (absent means empty): the sum of the amounts,
--      struct '<d', then the entries, oldest first (in time order, later ones after earlier ones
--      of the same time), each '<ddd': its time, the reservation id, the model tokens; entries a
--      whole window old leave from the head. A value not of this layout reads as empty.
--   c  the slots held by calls in flight: a sorted set; member '<id> <cap>' ('%.17g' each): the
--      reservation id and the time its lease ends whatever happens (taken + lease timeout); score:
--      the time the slot expires unless its holder renews it, min(taken or last renewal + slot
--      lease, cap) (renew.lua). A slot counts while now < its score. (A member that is a bare id
--      has its cap as its score.)
--   (t is passed, and exists, only for budgets with a model-token limit; c only for budgets with a
--   concurrency limit; a level's keys are passed in this order: s, t, c)
-- A state holds no limit: each call applies the limits it carries (a budget's, or a variant's of
-- the same name), so a level's limits may differ from call to call over the same state.
-- ARGV (numbers as little-endian doubles, packed by the client: ScriptArgs):
--   1  the call's numbers, struct '<ddd...', the first three read here: now in time units (NaN:
--      read the server's TIME, microseconds), time units per millisecond (1000 for microseconds,
--      1000000 for nanoseconds), the least TTL in milliseconds a written key gets (0: expire
--      exactly when fresh again); then each script's own (see its file)
--   2.. one per level, struct '<ddddddddd': window limit (0: no window), window length in time
--      units, bucket capacity (0: no bucket), refill per second, refill per time unit,
--      model-token limit (0: none), model-token window length in time units, concurrency limit
--      (0: none), lease length in time units

-- The functions below are closures created on every call: they name these constants as literals
-- (1e-9, the header '<BdddI4d' of 37 bytes, 4294967295) and struct.pack/unpack as globals rather
-- than as upvalues, each of which costs a closure time.
-- BudgetTable.TOLERANCE, 1e-9: a bucket admits a call when tokens + cost * 1e-9 >= cost; whole
-- unit-cost calls left are math.floor(tokens + 1e-9)
-- true when a script changes a log's entries other than by appending (refund.lua), or read a
-- header without the mark: commit then writes the whole state instead of a large log's header in
-- place
local rewrite = false

local LEVEL = '<ddddddddd' -- the struct of a level's argument
local now, unitsPerMs, minTtlMs = struct.unpack('<ddd', ARGV[1])
local serverTime = now ~= now -- NaN: the server's clock, else a ticker's
if serverTime then
  if redis.replicate_commands then
    redis.replicate_commands() -- replicate effects, not the script: TIME is not deterministic
  end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The next number of a root's reservation counter (seq), which expires a day after it started on
-- the server's clock (INCR keeps that expiry), a day after its last use on a ticker's. Entries that
-- hold its numbers may outlive it (a model-token window or a lease longer than that), so a counter
-- found missing restarts past every number it gave: at the current millisecond times 1000
-- (numbers never repeat unless a root took over 1000 a millisecond on average since its counter
-- started, and, on a ticker, unless the ticker went back), so on the server's clock, which
-- counts from the epoch, it needs no renewal on each number.
local function nextId(seq)
  local c = redis.call('INCR', seq)
  if c == 1 then
    c = math.max(1, math.floor(now / unitsPerMs) * 1000 + 1)
    redis.call('SET', seq, string.format('%d', c), 'PX', '86400000')
  elseif not serverTime then
    redis.call('PEXPIRE', seq, '86400000')
  end
  return c
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

-- Milliseconds until a bucket (capacity, refill per second, refill per time unit) holding tokens
-- as of at, short of cost now, admits a call of cost if nothing else arrives
-- (BudgetTable.tokensMs): the first whole millisecond R, at least 1, at which the refill and the
-- test that a call at now + R runs (load, then tokens + cost * 1e-9 >= cost) admit it, so a client
-- that waits R is admitted and one that waits R - 1 is not. The exact wait less the tolerance,
-- rounded up, is the estimate; it is moved 1 ms at a time (at most 64 steps each way) until the
-- call passes at R and not at R - 1. The same operations as Java's, in the same order. A cost
-- above the capacity, which no wait admits (inspect.lua's unit-cost call under a capacity below 1),
-- gets the estimate as it is.
local function tokensMs(refill, perUnit, capacity, cost, tokens, at)
  local since = now - at -- 0, unless the server's clock went back
  local ms = math.ceil((cost - cost * 1e-9 - tokens) * 1000.0 / refill)
  if not (ms >= 1) then
    ms = 1
  end
  if cost > capacity then
    return ms
  end
  local i = 0
  while i < 64 and ms > 1
      and math.min(capacity, tokens + (since + (ms - 1) * unitsPerMs) * perUnit) + cost * 1e-9
        >= cost do
    ms = ms - 1
    i = i + 1
  end
  i = 0
  while i < 64
      and math.min(capacity, tokens + (since + ms * unitsPerMs) * perUnit) + cost * 1e-9 < cost do
    ms = ms + 1
    i = i + 1
  end
  return ms
end

-- Milliseconds to regain deficit tokens at refill per second, rounded up, at least 1: until the
-- bucket is exactly full (BudgetTable.fullMs)
local function fullMs(refill, deficit)
  local up = math.ceil(deficit * 1000.0 / refill)
  if up < 1 then
    return 1
  end
  return up
end

-- A state of more bytes than this is read by ranges (load): a decision reads its header, its
-- newest admission and the admissions that leave, never the whole log (Redis's Lua hashes every
-- byte of every string it creates).
local LARGE_LOG = 4096

-- A state or window is first read up to this many bytes (GETRANGE, which copies only what the
-- string holds): a shorter one is then read whole in one command; only a longer one has its
-- length asked (STRLEN) and is read by ranges. As long as the largest value read whole, so that no
-- value costs three reads.
local PROBE = 4096

-- The length of a state as load returned it (a string, or a large one's table).
local function slen(s)
  return type(s) == 'table' and s.len or #s
end

-- A state as load returned it, as one string (a large one read whole, once: its table keeps it,
-- so that nth reads the state load read even after commit rewrote it).
local function full(s)
  if type(s) == 'table' then
    s.str = s.str or redis.call('GET', s.key)
    return s.str
  end
  return s
end

-- The time of the j-th oldest admission (from 0) in the window of a state as load returned it.
local function nth(s, width, base, first, j)
  local at = 37 + (first + j) * width
  local fmt = width == 4 and '<I4' or '<d'
  if type(s) == 'table' and not s.str then
    return base + struct.unpack(fmt, redis.call('GETRANGE', s.key, at, at + width - 1))
  end
  return base + struct.unpack(fmt, full(s), at + 1)
end

-- Reads the state of a level (window limit, window length, bucket capacity, refill per time unit)
-- from its key and brings it to now under these limits (BudgetTable.normalize): admissions a whole
-- window old dropped (they leave from the head: only the ones that leave now are read), a bucket
-- short of capacity refilled since its last refill (the time of which moves only then, or when the
-- bucket is charged: KeyEntry.refill), a bucket above capacity cut down to it. Returns the state
-- string (false: fresh, or not of this layout), the width of its entries, their base, the index of
-- the first one still in the window, the admissions in the window, the newest one (when any), the
-- tokens, the time of the last refill, whether the state changed, and its monitoring mark (nil
-- unless the value in Redis has one: fresh, or a header without it).
local function load(key, limit, window, capacity, perUnit)
  -- a large log is read by ranges: its header, its newest entry and the entries that left (s is
  -- then a table naming the key and its length: slen, full and nth read it)
  local s, h = redis.call('GETRANGE', key, 0, PROBE - 1), nil
  if #s == PROBE then
    local len = redis.call('STRLEN', key)
    if len > LARGE_LOG then
      local w = string.byte(s, 1)
      if w == 20 or w == 24 then
        s, h = {key = key, len = len}, string.sub(s, 1, 37)
      else
        s = redis.call('GET', key) -- another header: read whole (and rewritten below)
      end
    elseif len > PROBE then
      s = redis.call('GET', key)
    end
  elseif s == '' then
    s = false -- no state (or an empty string, which is not of this layout either)
  end
  local width, base, first, size, newest, tokens, at, dirty = 4, 0, 0, 0, nil, capacity, now, false
  local mark
  if s then
    local n = 0
    local w = string.byte(h or s, 1)
    if h then
      width, tokens, at, base, first, mark = struct.unpack('<BdddI4d', h)
      width = width - 16
    elseif (w == 20 or w == 24) and #s >= 37 then
      width, tokens, at, base, first, mark = struct.unpack('<BdddI4d', s)
      width = width - 16
    elseif (w == 4 or w == 8) and #s >= 29 then -- without the mark: given one of 0
      width, tokens, at, base, first = struct.unpack('<BdddI4', s)
      s = struct.pack('<BdddI4d', 16 + width, tokens, at, base, first, 0) .. string.sub(s, 30)
      rewrite = true
    else
      width = 0
    end
    if width ~= 0 then
      n = (slen(s) - 37) / width
    end
    if (width == 4 or width == 8) and n % 1 == 0 and first <= n then
      if capacity > 0 then
        if now > at and tokens < capacity then
          tokens = math.min(capacity, tokens + (now - at) * perUnit)
          at = now
          dirty = true -- the refill is kept, as the in-memory store keeps it
        end
        if tokens > capacity then
          tokens = capacity -- a call with a smaller capacity (another plan's)
          dirty = true
        end
      end
      if limit > 0 and first < n then
        local cut = now - window -- an admission at or before cut has left the window
        local head = first
        newest = nth(s, width, base, 0, n - 1)
        if newest <= cut then
          first = n
        else
          while nth(s, width, base, first, 0) <= cut do
            first = first + 1
          end
        end
        size = n - first
        dirty = dirty or first > head
      end
    else
      s, width, base, first, tokens, at = false, 4, 0, 0, capacity, now -- not this layout: fresh
      mark = nil
    end
  end
  if not s and window > 2147483648 then
    width = 8
  end
  return s, width, base, first, size, newest, tokens, at, dirty, mark
end

-- Charges a level as load returned it (admit: an admission at now in the window log; cost: bucket
-- tokens, 0 for none), writes its state if it changed, to expire once it would be fresh again (the
-- newest admission a whole window old, the bucket full; at least minTtlMs from now), or deletes it
-- once fresh under these limits, whether it changed or not (BudgetTable.forgetIfFresh: the next
-- call, whatever its limits, finds it fresh); a charged bucket that never refills keeps its key
-- without expiry. dirty nil: a level only read, never written nor deleted (a level a sequential
-- deny never reached). Returns the whole unit-cost calls both components admit now
-- (BudgetTable.remaining) and the milliseconds until both are full again (BudgetTable.resetMs
-- without model tokens); then each component on its own (BudgetTable.components): the requests
-- the window admits and the ms until it is empty, the calls the bucket pays for and the ms until
-- it is full (math.huge and 0 for a component the level does not have); last, true when it wrote
-- the state (with mark, its monitoring mark, 0 for none, in its header), false when it deleted
-- it, nil when it left it as it was.
local function commit(key, s, width, base, first, size, newest, tokens, at, dirty,
    limit, window, capacity, refill, admit, cost, mark)
  local added
  if admit then
    added = now
    if size > 0 then
      if newest > added then
        added = newest -- the server's clock went back: keep the log sorted, leave nothing early
      end
    else
      s, first, base = false, 0, added -- every earlier admission has left: restart at added
    end
    newest = added
    size = size + 1
    dirty = true
  end
  if cost > 0 then
    if now > at then
      at = now -- a bucket charged full has regained nothing since: its refill starts now
    end
    tokens = math.max(0, tokens - cost)
    dirty = true
  end
  local remaining, windowMs, bucketMs, bucketLeft = math.huge, 0, 0, math.huge
  if limit > 0 then
    remaining = math.max(0, limit - size) -- more admissions than a smaller limit: none left
    if size > 0 then
      windowMs = ceilMs(newest + window - now)
    end
  end
  local windowLeft = remaining
  local short = capacity > 0 and tokens < capacity
  if capacity > 0 then
    bucketLeft = math.floor(tokens + 1e-9)
    remaining = math.min(remaining, bucketLeft)
    if short and refill > 0 then
      bucketMs = fullMs(refill, capacity - tokens)
    end
  end
  local reset = math.max(windowMs, bucketMs)
  if dirty == nil then
    return remaining, reset, windowLeft, windowMs, bucketLeft, bucketMs
  end
  if size == 0 and not short then
    if s or dirty then
      redis.call('DEL', key)
      return remaining, reset, windowLeft, windowMs, bucketLeft, bucketMs, false
    end
    return remaining, reset, windowLeft, windowMs, bucketLeft, bucketMs
  end
  if not dirty then
    return remaining, reset, windowLeft, windowMs, bucketLeft, bucketMs
  end
  mark = mark or 0
  local forever = short and refill == 0 or reset >= 1e14 -- a one-shot budget never refills
  local offset = added and added - base
  if not rewrite and s and size > 0 and slen(s) > 4096 and 2 * first <= (slen(s) - 37) / width
      and not (added and width == 4 and offset > 4294967295) then
    -- a large log, written in place: the header rewritten, the admission appended, and the
    -- entries that left kept before first until they are half of the log (then copied out below)
    redis.call('SETRANGE', key, 0, struct.pack('<BdddI4d', 16 + width, tokens, at, base, first,
      mark))
    if added then
      redis.call('APPEND', key, struct.pack(width == 4 and '<I4' or '<d', offset))
    end
    if forever then
      redis.call('PERSIST', key)
    else
      redis.call('PEXPIRE', key, string.format('%d', math.max(reset + 1, minTtlMs)))
    end
    return remaining, reset, windowLeft, windowMs, bucketLeft, bucketMs, true
  end
  local log = ''
  if s then
    s = full(s) -- written whole: a large state's table keeps what was read (nth)
  end
  if size > 0 then
    local kept = added and size - 1 or size
    if kept > 0 then
      log = string.sub(s, 37 + 1 + first * width)
    end
    if added then
      if width == 4 and offset > 4294967295 then
        -- the offsets count from a base that is too old: count them from the oldest admission
        -- (an offset then stays below the window's length), in 8 bytes if even that is too long
        local from = kept > 0 and nth(s, width, base, first, 0) or added
        local times = {}
        for j = 1, kept do
          times[j] = base + struct.unpack('<I4', log, 1 + (j - 1) * 4)
        end
        if added - from > 4294967295 then
          width = 8
        end
        local fmt = width == 4 and '<I4' or '<d'
        for j = 1, kept do
          times[j] = struct.pack(fmt, times[j] - from)
        end
        log = table.concat(times)
        base = from
        offset = added - from
      end
      log = log .. struct.pack(width == 4 and '<I4' or '<d', offset)
    end
  end
  local value = struct.pack('<BdddI4d', 16 + width, tokens, at, base, 0, mark) .. log
  if forever then
    redis.call('SET', key, value)
  else
    redis.call('SET', key, value, 'PX', string.format('%d', math.max(reset + 1, minTtlMs)))
  end
  return remaining, reset, windowLeft, windowMs, bucketLeft, bucketMs, true
end

-- The model-token functions, created on first use: most calls limit no model tokens.
local T
local function modelTokens()
  if T then
    return T
  end
  -- What a reservation needs (load, append, resetMs, save) is defined here; the rest on the
  -- first use of any other function (the metatable's __index), so that such a call creates a few
  -- closures only.
  local more
  T = setmetatable({}, {__index = function(t, k)
    more()
    return rawget(t, k)
  end})

  -- Most calls add one entry and settle one, so the window is written in place: the header's sum
  -- rewritten (SETRANGE), a settled amount rewritten where its entry is, the new entries appended
  -- (APPEND). Entries that left the window stay at the head, counted in the stored sum, until
  -- more than STALE of them (every read drops them from the head as it reads, the sum with them),
  -- and only then is the window written whole. A script only ever creates the window's string
  -- once (its GET): Redis's Lua hashes every byte of every string it creates.
  local STALE = 32
  -- A window of more bytes than this is read by ranges (T.loadRanges), RANGE entries at a time.
  local LARGE = 4096
  local RANGE = 32

  -- Reads L's model-token window (its fields mkey, tpmLimit, tpmWindow), dropping the entries a
  -- whole window old (KeyEntry.expireModelTokens): keeps in L the string read (s), where its
  -- entries left start (from), their count, sum and newest time, and the sum of the entries before
  -- them that the string still holds (stale); new entries (tail) and settled amounts (edits) are
  -- kept apart until T.save.
  function T.load(L)
    local s = redis.call('GETRANGE', L.mkey, 0, PROBE - 1)
    if #s == PROBE then
      local len = redis.call('STRLEN', L.mkey)
      if len > LARGE and (len - 8) % 24 == 0 then
        return T.loadRanges(L, len)
      elseif len > PROBE then
        s = redis.call('GET', L.mkey)
      end
    end
    local sum, size, from = 0, 0, 9
    if s and #s >= 8 and (#s - 8) % 24 == 0 then
      sum = struct.unpack('<d', s)
      size = (#s - 8) / 24
      local cut = now - L.tpmWindow
      while size > 0 and struct.unpack('<d', s, from) <= cut do
        sum = sum - struct.unpack('<d', s, from + 16)
        from = from + 24
        size = size - 1
      end
      if size > 0 then
        L.tpmNewest = struct.unpack('<d', s, #s - 23)
      end
      L.stale = struct.unpack('<d', s) - sum
    else
      s = false
      L.stale = 0
    end
    L.exists = s and true
    L.s = s
    L.from = from
    L.inS = size -- the entries left in s (the others are in tail)
    L.tail = ''
    L.edits = {}
    L.tpmSum = sum
    L.tpmSize = size
    L.tpmDirty = s and size == 0 -- every entry left: the key goes
    L.body = nil
  end

  -- Adds a model-token entry at now (KeyEntry.appendModelTokens), after every entry of a time at
  -- or before now.
  function T.append(L, id, amount)
    local e = struct.pack('<ddd', now, id, amount)
    if L.tpmSize > 0 and L.tpmNewest > now then -- the server's clock went back
      local b = T.flat(L)
      local j = L.tpmSize
      while j > 0 and struct.unpack('<d', b, 1 + (j - 1) * 24) > now do
        j = j - 1
      end
      L.body = string.sub(b, 1, j * 24) .. e .. string.sub(b, 1 + j * 24)
    elseif L.body then
      L.body = L.body .. e
    else
      L.tail = L.tail .. e
    end
    L.tpmSum = L.tpmSum + amount
    L.tpmSize = L.tpmSize + 1
    L.tpmNewest = now
    L.tpmDirty = true
  end

  -- Milliseconds until L's model-token window is empty (BudgetTable.modelTokensResetMs).
  function T.resetMs(L)
    if L.tpmSize == 0 then
      return 0
    end
    return ceilMs(L.tpmNewest + L.tpmWindow - now)
  end

  -- Writes L's model-token window if it changed, to expire once it would be empty; deletes it
  -- once empty.
  -- (Entries that left the window are dropped by every read: a window that only lost entries is
  -- left as it is.)
  function T.save(L)
    if not L.tpmDirty then
      return
    end
    local ttl = string.format('%d', math.max(T.resetMs(L) + 1, minTtlMs))
    if L.tpmSize == 0 then
      if L.exists then
        redis.call('DEL', L.mkey)
      end
    elseif not L.body and L.exists and (L.from - 9) / 24 <= STALE then
      redis.call('SETRANGE', L.mkey, 0, struct.pack('<d', L.tpmSum + L.stale))
      for _, e in ipairs(L.edits) do
        redis.call('SETRANGE', L.mkey, e[1] + 15, struct.pack('<d', e[2]))
      end
      if #L.tail > 0 then
        redis.call('APPEND', L.mkey, L.tail)
      end
      redis.call('PEXPIRE', L.mkey, ttl)
    else
      redis.call('SET', L.mkey, struct.pack('<d', L.tpmSum) .. T.flat(L), 'PX', ttl)
    end
  end

  more = function()
    setmetatable(T, nil)
    -- T.load of a window of more than LARGE bytes (len), read by ranges: its sum, the entries that
    -- left (RANGE at a time from the head) and its newest entry; L.s stays unread (nil) until a
    -- path needs every entry (T.flat).
    function T.loadRanges(L, len)
      local stored = struct.unpack('<d', redis.call('GETRANGE', L.mkey, 0, 7))
      local sum, size, from = stored, (len - 8) / 24, 9
      local cut = now - L.tpmWindow
      local more = true
      while more and size > 0 do
        local chunk = redis.call('GETRANGE', L.mkey, from - 1, from - 2 + RANGE * 24)
        more = false
        for at = 1, #chunk - 23, 24 do
          if struct.unpack('<d', chunk, at) > cut then
            break
          end
          sum = sum - struct.unpack('<d', chunk, at + 16)
          from = from + 24
          size = size - 1
          more = at == #chunk - 23 -- the whole chunk left: read the next one
        end
      end
      if size > 0 then
        L.tpmNewest = struct.unpack('<d', redis.call('GETRANGE', L.mkey, len - 24, len - 1))
      end
      L.stale = stored - sum
      L.exists = true
      L.s = nil
      L.from = from
      L.inS = size
      L.tail = ''
      L.edits = {}
      L.tpmSum = sum
      L.tpmSize = size
      L.tpmDirty = size == 0
      L.body = nil
    end

    -- The entries left as one string, edits and tail included (L.body), for the paths that rewrite
    -- the window: from then on T.save writes it whole.
    function T.flat(L)
      if L.body then
        return L.body
      end
      if L.s == nil then
        L.s = redis.call('GET', L.mkey) -- a large window, read by ranges so far
      end
      local b = L.s and L.inS > 0 and string.sub(L.s, L.from) or ''
      for _, e in ipairs(L.edits) do
        local at = e[1] - L.from + 1
        b = string.sub(b, 1, at + 15) .. struct.pack('<d', e[2]) .. string.sub(b, at + 24)
      end
      L.body = b .. L.tail
      L.edits = {}
      L.tail = ''
      return L.body
    end

    -- Entries (a string of them, count many) with reservation id's amount set to actual, and what
    -- it held; nil when none is id's (looked for from the newest).
    local function settled(entries, count, id, actual)
      for j = count - 1, 0, -1 do
        local at = 1 + j * 24
        local _, eid, held = struct.unpack('<ddd', entries, at)
        if eid == id then
          return string.sub(entries, 1, at + 15) .. struct.pack('<d', actual)
            .. string.sub(entries, at + 24), held
        end
      end
    end

    -- Gives reservation id the actual amount (InMemoryStore.reconcile): its entry takes it while it
    -- is still in the window; once it has left, only an under-estimate is charged, as a new entry.
    -- The entry is looked for from the newest (ModelTokenLog.replace): a call settles soon after it
    -- was reserved, so only the entries added since are read, however many the window holds.
    function T.settle(L, id, estimate, actual)
      local field = L.body and 'body' or 'tail'
      local entries, held = settled(L[field], L.body and L.tpmSize or #L.tail / 24, id, actual)
      if entries then
        L[field] = entries
        L.tpmSum = L.tpmSum + actual - held
        L.tpmDirty = true
        return
      end
      if not L.body then
        local chunk, base = L.s, 0 -- s, or (a large window) its range read last, after base bytes
        for j = L.inS - 1, 0, -1 do
          local at = L.from + j * 24
          if not L.s and (chunk == nil or at - base < 1) then
            -- a large window: the RANGE entries up to entry j, read at once
            local lo = math.max(L.from, at - (RANGE - 1) * 24)
            chunk, base = redis.call('GETRANGE', L.mkey, lo - 1, at + 22), lo - 1
          end
          local _, eid, held = struct.unpack('<ddd', chunk, at - base)
          if eid == id then
            for _, e in ipairs(L.edits) do
              if e[1] == at then
                held = e[2] -- settled once already in this script
              end
            end
            L.tpmSum = L.tpmSum + actual - held
            L.edits[#L.edits + 1] = {at, actual}
            L.tpmDirty = true
            return
          end
        end
      end
      if actual > estimate then
        T.append(L, id, actual - estimate)
      end
    end

    -- Removes reservation id's entry from L's window, if it is still there (refund.lua: a charge
    -- undone leaves no entry behind), looked for from the newest as in T.settle.
    function T.remove(L, id)
      local b = T.flat(L)
      for j = L.tpmSize - 1, 0, -1 do
        local at = 1 + j * 24
        local _, eid, amount = struct.unpack('<ddd', b, at)
        if eid == id then
          L.tpmSum = L.tpmSum - amount
          L.body = string.sub(b, 1, at - 1) .. string.sub(b, at + 24)
          L.tpmSize = L.tpmSize - 1
          if L.tpmSize > 0 then
            L.tpmNewest = struct.unpack('<d', L.body, 1 + (L.tpmSize - 1) * 24)
          end
          L.tpmDirty = true
          return
        end
      end
    end

    -- For each level that limits model tokens (KEYS per level as for acquire.lua, from KEYS[1];
    -- ARGV[1 + i] the level's numbers), loads its window, calls visit(L) and writes what changed.
    function T.eachLevel(n, visit)
      local k = 1
      for i = 1, n do
        local tpmLimit, tpmWindow, slotLimit = select(6, struct.unpack(LEVEL, ARGV[1 + i]))
        if tpmLimit > 0 then
          local L = {mkey = KEYS[k + 1], tpmLimit = tpmLimit, tpmWindow = tpmWindow}
          k = k + 2
          T.load(L)
          visit(L)
          T.save(L)
        else
          k = k + 1
        end
        if slotLimit > 0 then
          k = k + 1
        end
      end
    end

    -- Milliseconds until enough model tokens leave L's window for the estimate
    -- (BudgetTable.modelTokensRetryMs): the oldest entries leave first.
    function T.retryMs(L, estimate)
      local excess = L.tpmSum + estimate - L.tpmLimit
      local b = T.flat(L)
      for j = 0, L.tpmSize - 1 do
        local at, _, amount = struct.unpack('<ddd', b, 1 + j * 24)
        excess = excess - amount
        if excess <= 0 then
          return math.max(1, ceilMs(at + L.tpmWindow - now))
        end
      end
      return math.max(1, ceilMs(L.tpmWindow))
    end
  end

  return T
end

-- The slot functions, created on first use: most calls limit no concurrency.
local C
local function slots()
  if C then
    return C
  end
  C = {}

  -- Drops the leases of ckey that have expired (expiry at or before now: LeaseSet.expire) and
  -- returns how many are held.
  function C.load(ckey)
    redis.call('ZREMRANGEBYSCORE', ckey, '-inf', now)
    return redis.call('ZCARD', ckey)
  end

  -- The member of reservation id's slot whose lease ends at cap.
  function C.member(id, cap)
    return string.format('%.17g %.17g', id, cap)
  end

  -- The cap of a member (see c above): when its lease ends whatever happens.
  function C.cap(member, score)
    local cap = string.match(member, ' (%S+)$')
    return cap and tonumber(cap) or score
  end

  -- Milliseconds until held - limit + 1 leases have reached their caps, so that one more call fits
  -- even if every holder lives and renews (from the earliest cap on: BudgetTable.slotsMs), at
  -- least 1: an upper bound, since a slot frees sooner when its call ends or its holder dies.
  function C.retryMs(ckey, held, limit)
    local all = redis.call('ZRANGE', ckey, 0, -1, 'WITHSCORES')
    local caps = {}
    for j = 1, #all, 2 do
      caps[#caps + 1] = C.cap(all[j], tonumber(all[j + 1]))
    end
    table.sort(caps)
    return math.max(1, ceilMs(caps[held - limit + 1] - now))
  end

  -- Takes a slot for reservation id: its lease ends at now + lease at the latest (the cap,
  -- BudgetTable.takeSlot), and sooner, now + slotLease, unless its holder renews it (slotLease 0:
  -- at the cap); the key expires with its last slot.
  function C.take(ckey, id, lease, slotLease)
    local cap = now + lease
    local expiry = cap
    if slotLease > 0 and now + slotLease < cap then
      expiry = now + slotLease
    end
    redis.call('ZADD', ckey, expiry, C.member(id, cap))
    local last = tonumber(redis.call('ZRANGE', ckey, -1, -1, 'WITHSCORES')[2])
    redis.call('PEXPIRE', ckey, math.max(ceilMs(last - now) + 1, minTtlMs))
  end

  -- Removes reservation id's slot from ckey; returns 1, or 0 when ckey holds none of it.
  function C.remove(ckey, id)
    local bare = string.format('%.17g', id)
    local prefix = bare .. ' '
    for _, m in ipairs(redis.call('ZRANGE', ckey, 0, -1)) do
      if m == bare or string.sub(m, 1, #prefix) == prefix then
        return redis.call('ZREM', ckey, m)
      end
    end
    return 0
  end

  return C
end

-- Monitoring (Monitoring.java, RedisAdministration): only acquire.lua keeps it, in the decision's
-- own script. ARGV[1]'s numbers 11 and 12 (after acquire.lua's ten): the index in KEYS of the
-- first monitoring key and the members a sorted set keeps; then per level the time to live in ms
-- of its period keys (0: none); then per level its period, modulo 2^32. KEYS from that index: per
-- level, its busiest set and its key estimate (a HyperLogLog), then per quota of the level (when
-- the call charges quotas) its spenders set. Each is a key of the call's hash slot.
--
-- A level's busiest set holds its use as a decision left it (acquire.lua's usage: after an
-- admission when the decision charged the level, else as found) and is written only when its mark
-- changes: (period + 1) * 128 plus the whole percent of that use, kept in its state's header (see
-- s above; a level without a state string, one with only model tokens or slots, has no mark and
-- is written on every call). So the score a set holds is the use of the last decision that moved
-- the level to another whole percent or was its first in the period; a member the cap dropped
-- comes back at its next such decision.
-- The functions that write the structures are created on first use.
local M
local function monitoring()
  if M then
    return M
  end
  M = {}
  local cap = struct.unpack('<d', ARGV[1], 89)

  -- Adds member to the sorted set top with score; a new member drops the lowest beyond the cap
  -- and sets the set's time to live (ttl ms, 0: none). Returns whether the member was new.
  local function rank(top, score, member, ttl)
    if redis.call('ZADD', top, score, member) == 0 then
      return false
    end
    redis.call('ZREMRANGEBYRANK', top, 0, -cap - 1)
    if ttl > 0 then
      redis.call('PEXPIRE', top, string.format('%.0f', ttl))
    end
    return true
  end

  -- Records level i's use, its state key in its busiest set (KEYS[at]; a member new in it, so new
  -- in the period or dropped since, adds its key part to the key estimate, KEYS[at + 1]), and the
  -- mark in its state when commit left the state as it was (written: see commit).
  function M.record(i, at, key, use, mark, written, loaded)
    local ttl = struct.unpack('<d', ARGV[1], 97 + (i - 1) * 8)
    if rank(KEYS[at], use, key, ttl)
        and redis.call('PFADD', KEYS[at + 1], string.match(key, '^.*:([^:]*):s$')) == 1
        and ttl > 0 then
      redis.call('PEXPIRE', KEYS[at + 1], string.format('%.0f', ttl))
    end
    if written == nil and loaded then
      redis.call('SETRANGE', key, 29, struct.pack('<d', mark))
    end
  end

  -- Records what quota q (acquire.lua) used after its charge.
  function M.spent(q)
    rank(q.top, q.used, q.key, q.ttl)
  end

  return M
end

-- The upstream functions (acquire.lua's UPSTREAM, upstream-acquire.lua), created on first use: most
-- calls go to no upstream. An upstream U holds its limits (limit, window, tpmLimit, tpmWindow,
-- slotLimit, lease) and its keys (ks its state, kt its model-token window, kc its slots, kr its
-- report; nil for one not passed).
local UP
-- How long a probe goes alone, in ms (Upstream.PROBE); how long without a report or a probe makes
-- the provider's last word stale (Upstream.SILENCE).
local PROBE_MS = 1000
local SILENCE_MS = 10000

local function upstreams()
  if UP then
    return UP
  end
  UP = {}

  -- Loads U under the limits in force (the provider's lower ones from its report) and sets U.wait:
  -- 0 when it admits a call of estimate model tokens, else the ms until what denies it lapses (the
  -- longest of: closed, no requests or model tokens left, too few model tokens left until their
  -- reset, a probe in flight (pu; one of silence, ps, only for a call that waits in the order,
  -- U.waiting), its slots, window or model tokens full); U.closed, the ms its report keeps it
  -- closed for whatever the call (UpstreamState.closedForMs); U.pn, whether the call is a probe
  -- if admitted, and U.soft, whether one of silence.
  function UP.decide(U, estimate)
    local r = redis.call('HMGET', U.kr, 'lr', 'lt', 'rr', 'ra', 'tr', 'ta', 'cu', 'pn', 'pu', 'hr',
      'ps')
    local lr, lt, cu = tonumber(r[1]), tonumber(r[2]), tonumber(r[7])
    U.rr, U.ra, U.tr, U.ta = tonumber(r[3]), tonumber(r[4]), tonumber(r[5]), tonumber(r[6])
    if lr and U.limit > 0 and lr < U.limit then
      U.limit = lr
    end
    if lt and U.tpmLimit > 0 and lt < U.tpmLimit then
      U.tpmLimit = lt
    end
    if not (U.ra and U.ra > now) then
      U.rr = nil -- no count of requests holds
    end
    if not (U.ta and U.ta > now) then
      U.tr = nil
    end
    local w = 0
    if cu and cu > now then
      w = ceilMs(cu - now)
    end
    if U.rr and U.rr < 1 then
      w = math.max(w, ceilMs(U.ra - now))
    end
    if U.tr and U.tr <= 0 then
      w = math.max(w, ceilMs(U.ta - now))
    end
    U.closed = w
    U.pn, U.soft = r[8], false
    local hr = tonumber(r[10])
    if not U.pn and hr and now - hr >= SILENCE_MS * unitsPerMs then
      -- the provider's last word is stale: the next call finds out first (a probe of silence,
      -- which holds back only the calls that wait in the order)
      U.pn, U.soft = true, true
    end
    local pu = tonumber(r[9])
    if pu and pu > now and (not r[11] or U.waiting) then
      w = math.max(w, ceilMs(pu - now))
    end
    if U.tr and U.tr < estimate then
      w = math.max(w, ceilMs(U.ta - now))
    end
    U.held = 0
    if U.slotLimit > 0 then
      U.held = slots().load(U.kc)
      if U.held >= U.slotLimit then
        w = math.max(w, C.retryMs(U.kc, U.held, U.slotLimit))
      end
    end
    local _
    U.s, U.width, U.base, U.first, U.size, U.newest, _, _, U.dirty =
      load(U.ks, U.limit, U.window, 0, 0)
    if U.limit > 0 and U.size >= U.limit then
      w = math.max(w, math.max(1,
        ceilMs(nth(U.s, U.width, U.base, U.first, U.size - U.limit) + U.window - now)))
    end
    if U.tpmLimit > 0 then
      U.L = {mkey = U.kt, tpmLimit = U.tpmLimit, tpmWindow = U.tpmWindow, level = U.level}
      modelTokens().load(U.L)
      if U.L.tpmSum + estimate > U.L.tpmLimit then
        w = math.max(w, T.retryMs(U.L, estimate))
      end
    end
    U.wait = w
  end

  -- Charges U, as decide left it, with an admitted call numbered id (0: none): its window, the
  -- report's counts (U.counted: 1 when it counted a request down, plus 2 when a call's model
  -- tokens, plus 4 when the call is a probe), its slots and its model tokens (written by the
  -- caller: T.save(U.L)). Returns what UP.remaining and UP.resetMs give after the call.
  function UP.charge(U, id, estimate, slotLease)
    commit(U.ks, U.s, U.width, U.base, U.first, U.size, U.newest, 0, now, U.dirty, U.limit,
      U.window, 0, 0, U.limit > 0, 0)
    if U.limit > 0 then
      U.size = U.size + 1
      U.newest = now
    end
    U.counted = 0
    if U.pn then
      -- the first call after a report closed the upstream or left a count at 0: a probe, which
      -- goes alone until the next report (report.lua clears pu) or PROBE_MS (Upstream.PROBE)
      redis.call('HSET', U.kr, 'pu', string.format('%.17g', now + PROBE_MS * unitsPerMs))
      if U.soft then
        redis.call('HSET', U.kr, 'ps', '1', 'hr', string.format('%.17g', now))
      else
        redis.call('HDEL', U.kr, 'pn', 'ps')
      end
      local ttl = redis.call('PTTL', U.kr)
      if ttl >= 0 and ttl <= PROBE_MS then
        redis.call('PEXPIRE', U.kr, PROBE_MS + 1)
      end
      U.counted = 4
    end
    if U.rr then
      redis.call('HINCRBY', U.kr, 'rr', -1)
      U.rr = U.rr - 1
      U.counted = U.counted + 1
    end
    if U.tr and estimate > 0 then
      redis.call('HINCRBY', U.kr, 'tr', string.format('%.0f', -estimate))
      U.tr = U.tr - estimate
      U.counted = U.counted + 2
    end
    if U.slotLimit > 0 and id ~= 0 then
      C.take(U.kc, id, U.lease, slotLease)
      U.held = U.held + 1
    end
    if U.L and id ~= 0 then
      T.append(U.L, id, estimate)
    end
    return UP.remaining(U), UP.resetMs(U)
  end

  -- The unit-cost calls U admits now (InMemoryStore.upstreamRemaining): its window's and slots',
  -- no more than the requests its report left, none while its report closes it.
  function UP.remaining(U)
    if U.closed > 0 then
      return 0
    end
    local r = math.huge
    if U.limit > 0 then
      r = math.max(0, U.limit - U.size)
    end
    if U.slotLimit > 0 then
      r = math.min(r, math.max(0, U.slotLimit - U.held))
    end
    if U.rr then
      r = math.min(r, math.max(0, U.rr))
    end
    return r
  end

  -- Milliseconds until U's window and model-token window are empty (BudgetTable.resetMs).
  function UP.resetMs(U)
    local ms = 0
    if U.limit > 0 and U.size > 0 then
      ms = ceilMs(U.newest + U.window - now)
    end
    if U.L then
      ms = math.max(ms, T.resetMs(U.L))
    end
    return ms
  end

  -- U's seven figures as its state stands (BudgetTable.components, as for a level).
  function UP.figures(U)
    local windowLeft, windowMs, tokensLeft, tokensMs = math.huge, 0, math.huge, 0
    if U.limit > 0 then
      windowLeft = math.max(0, U.limit - U.size)
      windowMs = U.size > 0 and ceilMs(U.newest + U.window - now) or 0
    end
    if U.L then
      tokensLeft, tokensMs = math.max(0, U.L.tpmLimit - U.L.tpmSum), T.resetMs(U.L)
    end
    return windowLeft, windowMs, math.huge, 0,
      U.slotLimit > 0 and math.max(0, U.slotLimit - U.held) or math.huge, tokensLeft, tokensMs
  end

  return UP
end

-- The fair order of the calls that wait for an upstream (UpstreamOrder), created on first use: only
-- a call with a turn (acquire.lua, upstream-acquire.lua, refund.lua) and the order's own scripts
-- (order-*.lua) use it. An order O is {base = its first key, tenant = the turn's tenant (a hash),
-- class, weight, estimate, waiter (nil: none)}. Its keys, all base .. suffix, under the upstream's
-- hash tag (so one script reads them with the upstream's state; built here from base, the one key
-- the caller passes, as they lie in its slot):
--   :n        the number of waiting calls; absent when none waits (so the admission of a call
--             while none waits costs one EXISTS)
--   :k        a sorted set of the classes with a backlog, scored by class
--   :q:<c>    a sorted set of the tenants backlogged in class c, scored by counter; member the
--             15-digit entry number of the tenant's earliest waiting call in c, then the tenant
--             (equal counters: the earliest call first)
--   :t:<c>:<tenant>  a list of the tenant's waiting calls in class c, in the order they entered,
--             each its 15-digit entry number then its id
--   :w:<id>   a hash of a waiting call: t tenant, p class, w weight, e estimate, d deadline (in
--             the scripts' time units), s entry number
--   :d        a sorted set of the waiting calls' ids, scored by deadline
--   :s        the entry counter; :h the horizon last published on the waiting channel
--   :c        a hash of tenant -> counter; :a a sorted set of tenant -> last active time, for
--             forgetting a tenant neither backlogged nor served for ORDER_MEMORY_MS; :l a hash
--             of class -> the counter of the last tenant that left the class's backlog
-- Wake-ups: PUBLISH on <prefix>:upstream-signal (message: the upstream's encoded name) when the
-- first waiting call changes and calls still wait; on <prefix>:upstream-waiting ('<name> <ms>')
-- when a call enters an empty order or waits past the horizon last published (OR.enter).
local OR
local ORDER_MEMORY_MS = 60000
local function orders()
  if OR then
    return OR
  end
  -- What a call with a turn needs while no call waits, the common case, is defined here; the rest
  -- on the first use of any other function (the metatable's __index), so that such a call creates
  -- a few closures only.
  local more
  OR = setmetatable({}, {__index = function(t, k)
    more()
    return rawget(t, k)
  end})

  local function num(x)
    return string.format('%.17g', x)
  end

  local function pad(seq)
    return string.format('%015d', seq)
  end

  -- The order of the upstream whose order keys start with base (its channels: see channels).
  function OR.open(base, tenant, class, weight, estimate, waiter)
    return {base = base, tenant = tenant, class = class, weight = weight, estimate = estimate,
      waiter = waiter, keepMs = ORDER_MEMORY_MS + minTtlMs}
  end

  function OR.counter(O, tenant)
    return tonumber(redis.call('HGET', O.base .. ':c', tenant)) or 0
  end

  local function setLastLeft(O, class, value)
    redis.call('HSET', O.base .. ':l', class, num(value))
    redis.call('PEXPIRE', O.base .. ':l', O.keepMs)
  end

  -- Whether calls wait (one EXISTS): the gate of an admission. When none does, O is idle: its
  -- counting needs no backlog.
  function OR.anyWaiting(O)
    O.idle = redis.call('EXISTS', O.base .. ':n') == 0
    return not O.idle
  end

  -- Counts an admitted call: the first waiting call (its turn names it) is served and leaves;
  -- any other call (none waits then: O.idle) passes through its class at once, which moves only
  -- the class's last-left counter, to the greater of the tenant's counter (0: none) and it, plus
  -- the call's service (UpstreamQueue.admitted). Returns the undo of refund.lua's OR.undo: mode
  -- (3 at once, 2 a waiting call), the service counted, the class's last-left before (nil: none)
  -- and after, and for a waiting call its entry number and deadline (0 and 0 for a call at once).
  function OR.admitted(O)
    local amount = O.estimate / O.weight
    local before = tonumber(redis.call('HGET', O.base .. ':l', O.class))
    if O.first then
      return OR.served(O, amount, before)
    end
    local c = math.max(OR.counter(O, O.tenant), before or 0) + amount
    setLastLeft(O, O.class, c)
    return 3, amount, before, c, 0, 0
  end

  more = function()
    setmetatable(OR, nil)
    local PURGE = 32 -- the most expired calls one script takes out of the order
    local FORGET = 8 -- the most idle tenants one script forgets

    -- O's channels: O.signal, O.waitingChannel and O.name, the upstream's encoded name.
    local function channels(O)
      if not O.name then
        local prefix, name = string.match(O.base, '^(.*):{upstream:(.*)}:o$')
        O.signal, O.waitingChannel, O.name =
          prefix .. ':upstream-signal', prefix .. ':upstream-waiting', name
      end
      return O
    end

    -- Makes a key live at least ms from now (never shortens a longer life).
    local function extend(key, ms)
      if redis.call('PTTL', key) < ms then
        redis.call('PEXPIRE', key, string.format('%.0f', ms))
      end
    end

    -- The counters and tenants' activity live at least ORDER_MEMORY_MS after their last write,
    -- and as long as a waiting call's keys (OR.enter), so that a backlogged tenant keeps its
    -- counter however long it waits.
    local function touch(O, tenant)
      redis.call('ZADD', O.base .. ':a', num(now), tenant)
      extend(O.base .. ':c', O.keepMs)
      extend(O.base .. ':a', O.keepMs)
    end

    -- Sets a tenant's counter, moving it in the class of every backlog it is in (none when O.idle:
    -- no call waits).
    local function setCounter(O, tenant, value)
      redis.call('HSET', O.base .. ':c', tenant, num(value))
      touch(O, tenant)
      if O.idle then
        return
      end
      for _, c in ipairs(redis.call('ZRANGE', O.base .. ':k', 0, -1)) do
        local head = redis.call('LINDEX', O.base .. ':t:' .. c .. ':' .. tenant, 0)
        if head then
          redis.call('ZADD', O.base .. ':q:' .. c, num(value), string.sub(head, 1, 15) .. tenant)
        end
      end
    end

    -- Lifts a tenant not backlogged in a class to the class's floor: the least counter backlogged
    -- there, else the counter of the last tenant that left it.
    local function lift(O, tenant, class)
      local least = O.idle and {}
        or redis.call('ZRANGE', O.base .. ':q:' .. class, 0, 0, 'WITHSCORES')
      local floor = tonumber(least[2])
        or tonumber(redis.call('HGET', O.base .. ':l', class)) or 0
      local c = OR.counter(O, tenant)
      if c < floor then
        setCounter(O, tenant, floor)
        return floor
      end
      return c
    end

    -- The id of the first waiting call as the keys stand (nil when none waits), its tenant, class.
    -- Entries whose keys expired before them (a class without backlog, a tenant without its list:
    -- keys of one order may expire apart when nothing reads it for long) are taken out on the way,
    -- at most PURGE of them.
    local function head(O)
      for _ = 1, PURGE do
        local c = redis.call('ZRANGE', O.base .. ':k', 0, 0)[1]
        if not c then
          return nil
        end
        local q = O.base .. ':q:' .. c
        local m = redis.call('ZRANGE', q, 0, 0)[1]
        if not m then
          redis.call('ZREM', O.base .. ':k', c)
        else
          local tenant = string.sub(m, 16)
          local h = redis.call('LINDEX', O.base .. ':t:' .. c .. ':' .. tenant, 0)
          if h then
            return string.sub(h, 16), tenant, c
          end
          redis.call('ZREM', q, m)
        end
      end
      return nil
    end

    -- Takes a call out of the order (it left, expired or was admitted); returns whether it was in
    -- it. A tenant whose last call in a class leaves marks the class's last-left counter. When the
    -- call was first (wasFirst, or found so when nil) and calls still wait, the next one is
    -- signalled.
    function OR.remove(O, id, wasFirst)
      local wkey = O.base .. ':w:' .. id
      local w = redis.call('HMGET', wkey, 't', 'p', 's')
      redis.call('ZREM', O.base .. ':d', id)
      if not w[1] then
        return false
      end
      redis.call('DEL', wkey)
      local tenant, c = w[1], w[2]
      local first = wasFirst
      if first == nil then
        first = head(O) == id
      end
      local list = O.base .. ':t:' .. c .. ':' .. tenant
      local elem = pad(tonumber(w[3])) .. id
      local wasHead = redis.call('LINDEX', list, 0) == elem
      if redis.call('LREM', list, 1, elem) == 0 then
        return false
      end
      local n = redis.call('DECR', O.base .. ':n')
      if n <= 0 then
        redis.call('DEL', O.base .. ':n')
      end
      if wasHead then
        local q = O.base .. ':q:' .. c
        redis.call('ZREM', q, string.sub(elem, 1, 15) .. tenant)
        local nextHead = redis.call('LINDEX', list, 0)
        if nextHead then
          redis.call('ZADD', q, num(OR.counter(O, tenant)), string.sub(nextHead, 1, 15) .. tenant)
        else
          setLastLeft(O, c, OR.counter(O, tenant))
          if redis.call('EXISTS', q) == 0 then
            redis.call('ZREM', O.base .. ':k', c)
          end
        end
      end
      touch(O, tenant)
      if first and n > 0 then
        redis.call('PUBLISH', channels(O).signal, O.name)
      end
      return true
    end

    -- Forgets at most count tenants neither backlogged nor served for ORDER_MEMORY_MS: their
    -- counters go (a tenant still backlogged is marked active instead).
    local function forget(O, count)
      local idle = redis.call('ZRANGEBYSCORE', O.base .. ':a', '-inf',
        num(now - ORDER_MEMORY_MS * unitsPerMs), 'LIMIT', 0, count)
      if #idle > 0 then
        local classes = O.idle and {} or redis.call('ZRANGE', O.base .. ':k', 0, -1)
        for _, tenant in ipairs(idle) do
          local waits = false
          for _, c in ipairs(classes) do
            if redis.call('EXISTS', O.base .. ':t:' .. c .. ':' .. tenant) == 1 then
              waits = true
              break
            end
          end
          if waits then
            redis.call('ZADD', O.base .. ':a', num(now), tenant)
          else
            redis.call('HDEL', O.base .. ':c', tenant)
            redis.call('ZREM', O.base .. ':a', tenant)
          end
        end
      end
    end

    -- Takes out of the order the calls whose deadline passed (at most PURGE), and forgets idle
    -- tenants (at most FORGET).
    function OR.purge(O)
      if redis.call('EXISTS', O.base .. ':n') == 1 then
        for _, id in ipairs(redis.call('ZRANGEBYSCORE', O.base .. ':d', '-inf', num(now),
            'LIMIT', 0, PURGE)) do
          OR.remove(O, id)
        end
      end
      forget(O, FORGET)
    end

    -- The first waiting call whose deadline has not passed (nil: none waits), after the purge.
    function OR.first(O)
      OR.purge(O)
      for _ = 1, PURGE do
        local id = head(O)
        if not id then
          redis.call('DEL', O.base .. ':n') -- none waits: a count left by expired keys goes too
          return nil
        end
        local d = tonumber(redis.call('ZSCORE', O.base .. ':d', id))
        if d and d > now then
          return id
        end
        if not OR.remove(O, id) then
          -- a call listed without its hash (expired by its TTL): taken out of its list
          local _, tenant, c = head(O)
          local list = O.base .. ':t:' .. c .. ':' .. tenant
          local h = redis.call('LPOP', list)
          redis.call('ZREM', O.base .. ':q:' .. c, string.sub(h, 1, 15) .. tenant)
          local nextHead = redis.call('LINDEX', list, 0)
          if nextHead then
            redis.call('ZADD', O.base .. ':q:' .. c, num(OR.counter(O, tenant)),
              string.sub(nextHead, 1, 15) .. tenant)
          elseif redis.call('EXISTS', O.base .. ':q:' .. c) == 0 then
            redis.call('ZREM', O.base .. ':k', c)
          end
          if redis.call('DECR', O.base .. ':n') <= 0 then
            redis.call('DEL', O.base .. ':n')
          end
        end
      end
      return head(O)
    end

    -- Puts the call O.waiter in the order for maxWait time units; its keys live ttlMs. Returns the
    -- number of calls waiting then.
    function OR.enter(O, maxWait, ttlMs)
      OR.purge(O)
      local seq = redis.call('INCR', O.base .. ':s')
      local deadline = now + maxWait
      local wkey = O.base .. ':w:' .. O.waiter
      redis.call('HSET', wkey, 't', O.tenant, 'p', O.class, 'w', num(O.weight), 'e',
        num(O.estimate), 'd', num(deadline), 's', seq)
      redis.call('PEXPIRE', wkey, string.format('%.0f', ttlMs))
      redis.call('ZADD', O.base .. ':d', num(deadline), O.waiter)
      local list = O.base .. ':t:' .. O.class .. ':' .. O.tenant
      local elem = pad(seq) .. O.waiter
      if redis.call('EXISTS', list) == 0 then
        local c = lift(O, O.tenant, O.class)
        redis.call('ZADD', O.base .. ':q:' .. O.class, num(c), string.sub(elem, 1, 15) .. O.tenant)
        redis.call('ZADD', O.base .. ':k', O.class, O.class)
      end
      redis.call('RPUSH', list, elem)
      local n = redis.call('INCR', O.base .. ':n')
      touch(O, O.tenant)
      for _, suffix in ipairs({':n', ':k', ':q:' .. O.class, ':d', ':s', ':h', ':t:' .. O.class
          .. ':' .. O.tenant, ':c', ':a', ':l'}) do
        extend(O.base .. suffix, ttlMs)
      end
      -- the other instances learn that calls may wait until the horizon, and signal till then
      local h = tonumber(redis.call('GET', O.base .. ':h'))
      if n == 1 or not h or h < deadline then
        h = deadline + maxWait
        redis.call('SET', O.base .. ':h', num(h), 'PX', string.format('%.0f', ttlMs))
        redis.call('PUBLISH', channels(O).waitingChannel, O.name .. ' ' .. ceilMs(h - now))
      end
      return n
    end

    -- Undoes OR.admitted for a call whose caller's levels denied it after the upstream admitted it
    -- (a Cluster's two steps): a waiting call's service comes off its tenant's counter, the
    -- class's last-left mark goes back unless another call moved it, and a waiting call whose
    -- deadline has not passed is put back first among its tenant's calls, with its entry number.
    function OR.undo(O, mode, amount, before, after, seq, deadline)
      if mode == 2 and redis.call('HEXISTS', O.base .. ':c', O.tenant) == 1 then
        setCounter(O, O.tenant, OR.counter(O, O.tenant) - amount)
      end
      if tonumber(redis.call('HGET', O.base .. ':l', O.class)) == after then
        if before then
          redis.call('HSET', O.base .. ':l', O.class, num(before))
        else
          redis.call('HDEL', O.base .. ':l', O.class)
        end
      end
      if mode ~= 2 or deadline <= now then
        return
      end
      local wkey = O.base .. ':w:' .. O.waiter
      redis.call('HSET', wkey, 't', O.tenant, 'p', O.class, 'w', num(O.weight), 'e',
        num(O.estimate), 'd', num(deadline), 's', seq)
      redis.call('PEXPIRE', wkey, ceilMs(deadline - now) + O.keepMs)
      redis.call('ZADD', O.base .. ':d', num(deadline), O.waiter)
      local list = O.base .. ':t:' .. O.class .. ':' .. O.tenant
      local q = O.base .. ':q:' .. O.class
      local elem = pad(seq) .. O.waiter
      local old = redis.call('LINDEX', list, 0)
      if old then
        redis.call('ZREM', q, string.sub(old, 1, 15) .. O.tenant)
      end
      redis.call('LPUSH', list, elem)
      redis.call('ZADD', q, num(OR.counter(O, O.tenant)), string.sub(elem, 1, 15) .. O.tenant)
      redis.call('ZADD', O.base .. ':k', O.class, O.class)
      redis.call('INCR', O.base .. ':n')
      local ttlMs = ceilMs(deadline - now) + O.keepMs
      for _, key in ipairs({list, q, O.base .. ':k', O.base .. ':d', O.base .. ':n'}) do
        extend(key, ttlMs)
      end
    end

    -- Corrects a tenant's counter by delta, unless the order forgot the tenant.
    function OR.settle(O, delta)
      if redis.call('HEXISTS', O.base .. ':c', O.tenant) == 1 then
        setCounter(O, O.tenant, OR.counter(O, O.tenant) + delta)
      end
    end

    -- The number of waiting calls whose deadline has not passed, after the purge.
    function OR.waiting(O)
      OR.first(O)
      return redis.call('ZCOUNT', O.base .. ':d', '(' .. num(now), '+inf')
    end

    -- OR.admitted for the first waiting call.
    function OR.served(O, amount, before)
      O.idle = false
      local w = redis.call('HMGET', O.base .. ':w:' .. O.waiter, 's', 'd')
      setCounter(O, O.tenant, OR.counter(O, O.tenant) + amount)
      OR.remove(O, O.waiter, true)
      return 2, amount, before, tonumber(redis.call('HGET', O.base .. ':l', O.class)),
        tonumber(w[1]), tonumber(w[2])
    end
  end

  return OR
end
