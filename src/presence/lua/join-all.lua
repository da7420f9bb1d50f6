-- ARGV: base, agent, room -> 1 when the agent has sockets and had none in the room
local agent, room = ARGV[2], ARGV[3]
local akey = base .. 'agent:' .. agent
local sids = redis.call('SMEMBERS', akey)
if #sids == 0 then return 0 end
local key = akey .. ':room:' .. room
local before = redis.call('SCARD', key)
for _, sid in ipairs(sids) do
  redis.call('SADD', key, sid)
  redis.call('SADD', base .. 'socket:' .. sid .. ':rooms', room)
end
if before == 0 then return 1 end
return 0
