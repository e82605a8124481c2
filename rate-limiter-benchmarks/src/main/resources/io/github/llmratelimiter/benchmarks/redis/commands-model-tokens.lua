-- The commands of a window + bucket + model tokens reservation (acquire.lua: one level,
-- sequential, an estimate of model tokens) and nothing else: the server's clock, the root's
-- reservation counter, the level's model-token window and state read (their first 4 KB: small ones
-- whole), both written back with their expiry, and a reply of the decision's size. Called with the decision's keys and arguments
-- (their number and sizes): KEYS[1] the level's state, KEYS[2] its model-token window, KEYS[3] and
-- KEYS[4] the monitoring keys (not touched, as on a decision whose level's use did not move),
-- KEYS[5] the reservation counter; ARGV[1] the call's numbers, ARGV[2] the level's. ARGV[1]'s
-- first byte 1 runs no command (what the call's keys, arguments and reply cost alone).
if string.byte(ARGV[1], 1) == 1 then
  return 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxALLOWED'
end
redis.call('TIME')
redis.call('INCR', KEYS[5])
redis.call('GETRANGE', KEYS[2], 0, 4095)
redis.call('GETRANGE', KEYS[1], 0, 4095)
redis.call('SET', KEYS[1], 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'PX', '1001')
redis.call('SET', KEYS[2], 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'PX', '11')
return 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxALLOWED'
