-- Gives back the slots of one reservation at every level that limits concurrency
-- (InMemoryStore.release): removes its lease from each level's slots. Runs after lib.lua, which
-- reads the first three numbers of ARGV[1]. Idempotent: a lease released already, expired and
-- dropped, or never taken is not there, and removing it does nothing.
--
-- KEYS: per level that limits concurrency, its slots key (see lib.lua); all share one hash tag
-- ARGV[1] after the three of lib.lua (now 0: a release reads no time): the reservation id
-- Returns {the number of leases removed}.

local id = struct.unpack('<d', ARGV[1], 25)
local removed = 0
for i = 1, #KEYS do
  removed = removed + slots().remove(KEYS[i], id)
end
return {removed}
