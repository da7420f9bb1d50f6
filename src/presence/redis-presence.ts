import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { unavailable } from '../errors.js';
import { PRESENCE_SCRIPTS, type ScriptName } from './lua-scripts.js';
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
 * Every change is one Lua script (`lua/*.lua`, loaded by lua-scripts.ts), so it is atomic: two
 * nodes racing on the same agent never both see "first socket" (double online) or both miss "last
 * socket" (a lost offline). Expiry is judged by Redis's own clock (TIME), so clock skew between
 * nodes does not matter.
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
      return (await redis.eval(PRESENCE_SCRIPTS[name], 0, base, ...args)) as T;
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
