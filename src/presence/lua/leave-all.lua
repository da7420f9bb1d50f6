-- ARGV: base, agent, room -> 1 when the agent was present in the room
local agent, room = ARGV[2], ARGV[3]
local key = base .. 'agent:' .. agent .. ':room:' .. room
local sids = redis.call('SMEMBERS', key)
for _, sid in ipairs(sids) do
  redis.call('SREM', base .. 'socket:' .. sid .. ':rooms', room)
end
redis.call('DEL', key)
if #sids > 0 then return 1 end
return 0
