-- ARGV: base, node, ttl ms -> 1 when the node's entry was missing (first heartbeat, or it was swept / lost)
return touch(ARGV[2], ARGV[3])
