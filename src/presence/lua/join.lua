-- ARGV: base, agent, socket, room -> 1 when the agent had no socket in the room before
local agent, sid, room = ARGV[2], ARGV[3], ARGV[4]
local skey = base .. 'socket:' .. sid
if redis.call('EXISTS', skey) == 0 then return 0 end
local key = base .. 'agent:' .. agent .. ':room:' .. room
local before = redis.call('SCARD', key)
redis.call('SADD', key, sid)
redis.call('SADD', skey .. ':rooms', room)
if before == 0 then return 1 end
return 0
