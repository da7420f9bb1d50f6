import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { unavailable } from '../../errors.js';
import type { PresenceHooks, PresenceTracker } from './presence-tracker.js';

/**
 * Presence shared by every node through Redis, so that an agent online on node A and node B goes
 * offline only when its last socket anywhere leaves.
 *
 * Keys, all under `<REDIS_KEY_PREFIX>presence:`:
 *   nodes                      sorted set: node id -> expiry (ms, Redis clock), refreshed by heartbeat
 *   node:<node>                set of the node's socket ids (what a sweeper removes when it dies)
 *   dead, dead:<node>          nodes being swept, and their sockets not removed yet
 *   socket:<sid>               hash {agent, node}
 *   socket:<sid>:rooms         set of room ids the socket is subscribed to
 *   agent:<agent>              set of the agent's socket ids, on every node (online = non-empty)
 *   agent:<agent>:room:<room>  set of the agent's socket ids in that room (present = non-empty)
 *
 * Every change is one Lua script, so it is atomic: two nodes racing on the same agent never both
 * see "first socket" (double online) or both miss "last socket" (a lost offline). Expiry is judged
 * by Redis's own clock (TIME), so clock skew between nodes does not matter.
 *
 * Nothing depends on a node living to clean up: each node refreshes its entry in `nodes` every
 * third of the TTL, and every node sweeps, on the same timer, the nodes whose entry expired: each
 * sweep script removes a batch of such a node's sockets and returns the (agent, room) pairs that
 * made absent, and only the node whose script did the removal announces them, so each offline
 * goes out once.
 *
 * A node re-registers its live sockets (reconcile) when its Redis connection comes back (Redis may
 * have restarted empty, or from an old snapshot) and when its heartbeat finds its entry gone (it
 * was paused past the TTL and swept): registrations of sockets that are gone are removed, missing
 * ones are added and announced online.
 *
 * Scripts are sent with EVAL every time rather than EVALSHA: after a Redis restart EVALSHA's
 * NOSCRIPT fallback would resend some commands later than others and could reorder a connect and a
 * disconnect of one socket. The scripts are small and presence changes are rare next to messages.
 *
 * Keys are built inside the scripts, so on Redis Cluster all of them must hash to one slot: use a
 * hash-tagged prefix such as `{ams}:`.
 */

const PRELUDE = `
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
`;

const SCRIPTS = {
  // ARGV: base, node, ttl ms, agent, socket, room... -> {connections of the agent, node entry was new (1/0), {rooms where first}}
  connect: `${PRELUDE}
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
return {redis.call('SCARD', akey), fresh, first}`,

  // ARGV: base, socket -> {agent, rooms where it was the last...} or {} for an unknown socket
  disconnect: `${PRELUDE}
local sid = ARGV[2]
local skey = base .. 'socket:' .. sid
local agent = redis.call('HGET', skey, 'agent')
if not agent then return {} end
local absent = {}
remove_socket(sid, agent, redis.call('HGET', skey, 'node'), absent)
table.insert(absent, 1, agent)
return absent`,

  // ARGV: base, agent, socket, room -> 1 when the agent had no socket in the room before
  join: `${PRELUDE}
local agent, sid, room = ARGV[2], ARGV[3], ARGV[4]
local skey = base .. 'socket:' .. sid
if redis.call('EXISTS', skey) == 0 then return 0 end
local key = base .. 'agent:' .. agent .. ':room:' .. room
local before = redis.call('SCARD', key)
redis.call('SADD', key, sid)
redis.call('SADD', skey .. ':rooms', room)
if before == 0 then return 1 end
return 0`,

  // ARGV: base, agent, socket, room -> 1 when it was the agent's last socket in the room
  leave: `${PRELUDE}
local agent, sid, room = ARGV[2], ARGV[3], ARGV[4]
if redis.call('SREM', base .. 'socket:' .. sid .. ':rooms', room) == 0 then return 0 end
local key = base .. 'agent:' .. agent .. ':room:' .. room
redis.call('SREM', key, sid)
if redis.call('SCARD', key) == 0 then return 1 end
return 0`,

  // ARGV: base, agent, room -> 1 when the agent has sockets and had none in the room
  joinAll: `${PRELUDE}
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
return 0`,

  // ARGV: base, agent, room -> 1 when the agent was present in the room
  leaveAll: `${PRELUDE}
local agent, room = ARGV[2], ARGV[3]
local key = base .. 'agent:' .. agent .. ':room:' .. room
local sids = redis.call('SMEMBERS', key)
for _, sid in ipairs(sids) do
  redis.call('SREM', base .. 'socket:' .. sid .. ':rooms', room)
end
redis.call('DEL', key)
if #sids > 0 then return 1 end
return 0`,

  // ARGV: base, node, ttl ms -> 1 when the node's entry was missing (first heartbeat, or it was swept / lost)
  heartbeat: `${PRELUDE}
return touch(ARGV[2], ARGV[3])`,

  // ARGV: base, batch -> {} when there is nothing to sweep, else {dead node, agent, room, agent, room, ...}
  // for up to `batch` of its sockets. A node whose entry expired is taken out of `nodes` and its
  // socket set moved aside (dead:<node>) in one step; its sockets are then removed batch by batch,
  // so Redis is never blocked long. A socket the node registered again meanwhile (it was only
  // paused, came back and re-registered) is in a fresh node:<node> set and is left alone.
  sweep: `${PRELUDE}
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
return out`,

  // ARGV: base, node -> 1 when the node left no socket behind and its entry was removed
  deregister: `${PRELUDE}
if redis.call('SCARD', base .. 'node:' .. ARGV[2]) > 0 then return 0 end
redis.call('ZREM', base .. 'nodes', ARGV[2])
return 1`,
} as const;

type ScriptName = keyof typeof SCRIPTS;

/**
 * Sockets removed per sweep script. Sweeping costs about 20 µs of Redis time per socket in 3 rooms
 * (measured: 5000 sockets in one script blocked Redis for 95 ms), so a batch blocks it for about
 * 2 ms. A tick runs up to MAX_SWEEPS_PER_TICK batches, other clients' commands interleaving between
 * them, and continues on the next tick.
 */
const SWEEP_BATCH = 100;
const MAX_SWEEPS_PER_TICK = 500;

export interface RedisPresenceOptions {
  /** config.redisKeyPrefix; the tracker's keys are `<prefix>presence:...`. */
  keyPrefix: string;
  /** config.presenceTtlSeconds: heartbeat every third of it; a silent node is swept after it. */
  ttlSeconds: number;
  logger: Logger;
  /** Unique per process by default. */
  nodeId?: string;
}

export interface RedisPresence extends PresenceTracker {
  readonly nodeId: string;
  /** One heartbeat + reconcile-if-needed + sweep, as the timer runs it (tests call it to skip waiting). */
  tick(): Promise<void>;
}

export function createRedisPresence(redis: Redis, options: RedisPresenceOptions): RedisPresence {
  const base = `${options.keyPrefix}presence:`;
  const nodeId = options.nodeId ?? `${hostname()}:${process.pid}:${randomUUID()}`;
  const ttlMs = options.ttlSeconds * 1000;
  const log = options.logger.child({ component: 'presence', nodeId });

  let hooks: PresenceHooks | null = null;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  /** A heartbeat or connect has succeeded once: a later "entry was new" means it was lost. */
  let registered = false;
  let needsReconcile = false;
  let failing = false;

  const call = async <T>(name: ScriptName, args: (string | number)[]): Promise<T> => {
    try {
      return (await redis.eval(SCRIPTS[name], 0, base, ...args)) as T;
    } catch (err) {
      // The caller logs it; clients see a clear UNAVAILABLE rather than an internal error.
      log.debug({ err: { message: err instanceof Error ? err.message : String(err) }, script: name }, 'presence script failed');
      throw unavailable('Presence unavailable');
    }
  };

  const noteRegistration = (fresh: number): void => {
    if (fresh === 1 && registered) needsReconcile = true;
    registered = true;
  };

  const announceAll = (agentId: string, roomIds: readonly string[], status: 'online' | 'offline'): void => {
    for (const roomId of roomIds) hooks?.announce(agentId, roomId, status);
  };

  /**
   * Makes Redis agree with this node's live sockets: registrations of sockets this node no longer
   * has are removed (offline where that was the last), live sockets that are missing are added
   * (online where they are the first).
   */
  const reconcile = async (): Promise<void> => {
    if (!hooks) return;
    const registeredIds = new Set(await redis.smembers(`${base}node:${nodeId}`));
    // Taken after the read, and the commands below are issued without a pause: a socket that
    // disconnects from here on has its own disconnect queued after them on this connection.
    const local = hooks.localSockets();
    const localIds = new Set(local.map((s) => s.socketId));
    const stale = [...registeredIds].filter((id) => !localIds.has(id));
    const missing = local.filter((s) => !registeredIds.has(s.socketId));
    await Promise.all([
      ...stale.map(async (socketId) => {
        const [agentId, ...rooms] = await call<string[]>('disconnect', [socketId]);
        if (agentId !== undefined) announceAll(agentId, rooms, 'offline');
      }),
      ...missing.map(async (s) => {
        const [, , first] = await call<[number, number, string[]]>('connect', [nodeId, ttlMs, s.agentId, s.socketId, ...new Set(s.roomIds)]);
        announceAll(s.agentId, first, 'online');
      }),
    ]);
    if (stale.length + missing.length > 0) {
      log.warn({ removed: stale.length, added: missing.length }, 'presence re-registered this node\'s sockets');
    }
  };

  const sweep = async (): Promise<void> => {
    const swept = new Map<string, number>();
    try {
      for (let i = 0; i < MAX_SWEEPS_PER_TICK; i++) {
        const [deadNode, ...pairs] = await call<string[]>('sweep', [SWEEP_BATCH]);
        if (deadNode === undefined) return;
        for (let j = 0; j + 1 < pairs.length; j += 2) hooks?.announce(pairs[j]!, pairs[j + 1]!, 'offline');
        swept.set(deadNode, (swept.get(deadNode) ?? 0) + pairs.length / 2);
      }
    } finally {
      for (const [deadNode, offline] of swept) log.info({ deadNode, offline }, 'presence swept the sockets of a node that stopped heartbeating');
    }
  };

  const tickOnce = async (): Promise<void> => {
    try {
      noteRegistration(await call<number>('heartbeat', [nodeId, ttlMs]));
      if (needsReconcile) {
        needsReconcile = false;
        try {
          await reconcile();
        } catch (err) {
          needsReconcile = true;
          throw err;
        }
      }
      await sweep();
      if (failing) log.info('presence heartbeat restored');
      failing = false;
    } catch {
      // One line per outage, not one per tick; the next tick retries.
      if (!failing) log.warn('presence heartbeat failed (Redis unavailable); retrying');
      failing = true;
    }
  };

  const tick = (): Promise<void> => {
    running ??= tickOnce().finally(() => {
      running = null;
    });
    return running;
  };

  // The first 'ready' happened before this tracker was built; a later one is a reconnection, after
  // which Redis may hold nothing (restarted empty) or an old snapshot of this node's sockets.
  const onReady = (): void => {
    needsReconcile = true;
    void tick();
  };

  return {
    nodeId,
    tick,

    async connect(agentId, socketId, roomIds) {
      const [connections, fresh, first] = await call<[number, number, string[]]>('connect', [nodeId, ttlMs, agentId, socketId, ...new Set(roomIds)]);
      noteRegistration(fresh);
      return { connections, firstInRooms: first };
    },

    async disconnect(agentId, socketId) {
      try {
        const [owner, ...rooms] = await call<string[]>('disconnect', [socketId]);
        return owner === agentId ? rooms : [];
      } catch (err) {
        // Left registered while this node lives: the next reconcile removes it.
        needsReconcile = true;
        throw err;
      }
    },

    async join(agentId, socketId, roomId) {
      return (await call<number>('join', [agentId, socketId, roomId])) === 1;
    },

    async leave(agentId, socketId, roomId) {
      return (await call<number>('leave', [agentId, socketId, roomId])) === 1;
    },

    async joinAllSockets(agentId, roomId) {
      return (await call<number>('joinAll', [agentId, roomId])) === 1;
    },

    async leaveAllSockets(agentId, roomId) {
      return (await call<number>('leaveAll', [agentId, roomId])) === 1;
    },

    async connectionCount(agentId) {
      try {
        return await redis.scard(`${base}agent:${agentId}`);
      } catch {
        throw unavailable('Presence unavailable');
      }
    },

    async onlineAgents(agentIds) {
      if (agentIds.length === 0) return new Set();
      const pipeline = redis.pipeline();
      for (const id of agentIds) pipeline.exists(`${base}agent:${id}`);
      let results: [Error | null, unknown][] | null;
      try {
        results = await pipeline.exec();
      } catch {
        throw unavailable('Presence unavailable');
      }
      if (results === null || results.some(([err]) => err !== null)) throw unavailable('Presence unavailable');
      return new Set(agentIds.filter((_, i) => results[i]![1] === 1));
    },

    start(startHooks) {
      if (timer) return;
      hooks = startHooks;
      redis.on('ready', onReady);
      timer = setInterval(() => void tick(), Math.max(250, Math.floor(ttlMs / 3)));
      timer.unref();
      void tick();
    },

    async stop() {
      if (!timer) return;
      clearInterval(timer);
      timer = undefined;
      redis.off('ready', onReady);
      await running;
      // With every socket gone the node's entry can go at once; sockets whose removal failed are
      // left to the sweepers (after the TTL).
      await call<number>('deregister', [nodeId]).catch(() => undefined);
      hooks = null;
    },
  };
}
