-- ARGV: base, node -> 1 when the node left no socket behind and its entry was removed
if redis.call('SCARD', base .. 'node:' .. ARGV[2]) > 0 then return 0 end
redis.call('ZREM', base .. 'nodes', ARGV[2])
return 1
