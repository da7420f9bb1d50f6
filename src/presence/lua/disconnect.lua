-- ARGV: base, socket -> {agent, rooms where it was the last...} or {} for an unknown socket
local sid = ARGV[2]
local skey = base .. 'socket:' .. sid
local agent = redis.call('HGET', skey, 'agent')
if not agent then return {} end
local absent = {}
remove_socket(sid, agent, redis.call('HGET', skey, 'node'), absent)
table.insert(absent, 1, agent)
return absent
