-- ARGV: base, agent, socket, room -> 1 when it was the agent's last socket in the room
local agent, sid, room = ARGV[2], ARGV[3], ARGV[4]
if redis.call('SREM', base .. 'socket:' .. sid .. ':rooms', room) == 0 then return 0 end
local key = base .. 'agent:' .. agent .. ':room:' .. room
redis.call('SREM', key, sid)
if redis.call('SCARD', key) == 0 then return 1 end
return 0
