-- ARGV: base, node, ttl ms, agent, socket, room... -> {connections of the agent, node entry was new (1/0), {rooms where first}}
local node, ttl, agent, sid = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local fresh = touch(node, ttl)
local skey = base .. 'socket:' .. sid
local akey = base .. 'agent:' .. agent
redis.call('HSET', skey, 'agent', agent, 'node', node)
redis.call('SADD', base .. 'node:' .. node, sid)
redis.call('SADD', akey, sid)
local first = {}
for i = 6, #ARGV do
  local room = ARGV[i]
  local key = akey .. ':room:' .. room
  local others = redis.call('SCARD', key) - redis.call('SISMEMBER', key, sid)
  redis.call('SADD', key, sid)
  redis.call('SADD', skey .. ':rooms', room)
  if others == 0 then first[#first + 1] = room end
end
return {redis.call('SCARD', akey), fresh, first}
