-- ARGV: base, batch -> {} when there is nothing to sweep, else {dead node, agent, room, agent, room, ...}
-- for up to `batch` of its sockets. A node whose entry expired is taken out of `nodes` and its
-- socket set moved aside (dead:<node>) in one step; its sockets are then removed batch by batch,
-- so Redis is never blocked long. A socket the node registered again meanwhile (it was only
-- paused, came back and re-registered) is in a fresh node:<node> set and is left alone.
local node = redis.call('SRANDMEMBER', base .. 'dead')
local dkey
if not node then
  local expired = redis.call('ZRANGEBYSCORE', base .. 'nodes', '-inf', now_ms(), 'LIMIT', 0, 1)
  if #expired == 0 then return {} end
  node = expired[1]
  redis.call('ZREM', base .. 'nodes', node)
  local nkey = base .. 'node:' .. node
  dkey = base .. 'dead:' .. node
  if redis.call('EXISTS', nkey) == 1 then
    if redis.call('EXISTS', dkey) == 1 then
      redis.call('SUNIONSTORE', dkey, dkey, nkey)
      redis.call('DEL', nkey)
    else
      redis.call('RENAME', nkey, dkey)
    end
  end
  redis.call('SADD', base .. 'dead', node)
else
  dkey = base .. 'dead:' .. node
end
local out = {node}
local live = base .. 'node:' .. node
for _, sid in ipairs(redis.call('SPOP', dkey, tonumber(ARGV[2]))) do
  local agent = redis.call('HGET', base .. 'socket:' .. sid, 'agent')
  if agent and redis.call('SISMEMBER', live, sid) == 0 then
    local absent = {}
    remove_socket(sid, agent, node, absent)
    for _, room in ipairs(absent) do
      out[#out + 1] = agent
      out[#out + 1] = room
    end
  end
end
if redis.call('SCARD', dkey) == 0 then redis.call('SREM', base .. 'dead', node) end
return out
