-- The commands of a window + bucket decision (acquire.lua's common case: one level, sequential,
-- no model tokens) and nothing else: the server's clock, the level's state read (its first 4 KB: a
-- small state whole) and written back with its expiry, and a reply of the decision's size. Called with the decision's keys and
-- arguments (their number and sizes): KEYS[1] the level's state, KEYS[2] and KEYS[3] the
-- monitoring keys (not touched, as on a decision whose level's use did not move); ARGV[1] the
-- call's numbers, ARGV[2] the level's. ARGV[1]'s first byte 1 runs no command (what the call's
-- keys, arguments and reply cost alone).
if string.byte(ARGV[1], 1) == 1 then
  return 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxALLOWED'
end
redis.call('TIME')
redis.call('GETRANGE', KEYS[1], 0, 4095)
redis.call('SET', KEYS[1], 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'PX', '1001')
return 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxALLOWED'
