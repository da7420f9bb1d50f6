-- Shared by every presence script (lua-scripts.ts prepends it): ARGV[1] is the key base.
pcall(redis.replicate_commands)
local base = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function touch(node, ttl)
  return redis.call('ZADD', base .. 'nodes', now_ms() + tonumber(ttl), node)
end
local function remove_socket(sid, agent, node, absent)
  local skey = base .. 'socket:' .. sid
  local akey = base .. 'agent:' .. agent
  for _, room in ipairs(redis.call('SMEMBERS', skey .. ':rooms')) do
    local key = akey .. ':room:' .. room
    redis.call('SREM', key, sid)
    if redis.call('SCARD', key) == 0 then absent[#absent + 1] = room end
  end
  redis.call('SREM', akey, sid)
  redis.call('SREM', base .. 'node:' .. node, sid)
  redis.call('DEL', skey, skey .. ':rooms')
end
