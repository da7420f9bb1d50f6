import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config/config.js';
import { readEnv } from '../../src/config/env.js';
import { AppError } from '../../src/errors.js';
import type { LocalSocket } from '../../src/presence/presence-tracker.js';
import { createRedisPresence, type RedisPresence } from '../../src/presence/redis-presence.js';
import { REDIS_CLIENT_DEFAULTS } from '../../src/cluster/redis-client.js';
import { deleteRedisKeys } from '../helpers/cluster.js';
import { REDIS_TEST_URL } from '../helpers/server.js';
import { freePort, servicesAvailable } from '../helpers/services.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';

// The Redis presence tracker itself, several "nodes" in one process on the machine's Redis (under
// a prefix of this file's own): atomicity under races, sweeping of dead nodes, re-registration.
const ready = await servicesAvailable('Redis presence tracker tests', ['redis']);

interface Announced {
  agentId: string;
  roomId: string;
  status: 'online' | 'offline';
}

describe.skipIf(!ready)('Redis presence tracker', () => {
  const prefix = `ams-test-${randomBytes(5).toString('hex')}:`;
  const logger = pino({ level: 'silent' });
  const clients: Redis[] = [];
  const trackers: RedisPresence[] = [];
  let admin: Redis;

  /** A connected client with the service's fail-fast settings. */
  const client = async (): Promise<Redis> => {
    const redis = new Redis(REDIS_TEST_URL, { ...REDIS_CLIENT_DEFAULTS });
    redis.on('error', () => undefined);
    clients.push(redis);
    await waitUntil('redis', () => redis.status === 'ready', 5000, 10);
    return redis;
  };
  /** One "node": its own connection and node id; not started (no heartbeat) unless told. */
  const node = async (ttlSeconds = 1): Promise<RedisPresence> => {
    const tracker = createRedisPresence(await client(), { keyPrefix: prefix, ttlSeconds, logger });
    trackers.push(tracker);
    return tracker;
  };
  /** Starts a node's heartbeat and sweeping, recording what it announces. */
  const started = (tracker: RedisPresence, local: () => LocalSocket[] = () => []): Announced[] => {
    const announced: Announced[] = [];
    tracker.start({ localSockets: local, announce: (agentId, roomId, status) => announced.push({ agentId, roomId, status }) });
    return announced;
  };

  beforeAll(async () => {
    admin = await client();
  });
  afterEach(async () => {
    await Promise.all(trackers.splice(0).map((t) => t.stop()));
  });
  afterAll(async () => {
    await deleteRedisKeys(REDIS_TEST_URL, prefix);
    for (const c of clients) c.disconnect();
  });

  it('counts an agent online on two nodes until its last socket anywhere leaves, per room and overall', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const [agent, room, other] = [randomUUID(), randomUUID(), randomUUID()];

    expect(await a.connect(agent, 'sa', [room])).toEqual({ connections: 1, firstInRooms: [room] });
    expect(await b.connect(agent, 'sb', [room, other])).toEqual({ connections: 2, firstInRooms: [other] });
    expect(await a.onlineAgents([agent, randomUUID()])).toEqual(new Set([agent]));
    expect(await b.connectionCount(agent)).toBe(2);

    expect(await a.disconnect(agent, 'sa')).toEqual([]); // still present on node B
    expect(await b.onlineAgents([agent])).toEqual(new Set([agent]));
    expect((await b.disconnect(agent, 'sb')).sort()).toEqual([room, other].sort());
    expect(await a.onlineAgents([agent])).toEqual(new Set());
    expect(await a.disconnect(agent, 'sb')).toEqual([]); // idempotent

    // join/leave and the membership-wide operations see both nodes' sockets.
    await a.connect(agent, 'sa', []);
    await b.connect(agent, 'sb', []);
    expect(await a.join(agent, 'sa', room)).toBe(true);
    expect(await b.join(agent, 'sb', room)).toBe(false);
    expect(await a.leave(agent, 'sa', room)).toBe(false);
    expect(await b.leave(agent, 'sb', room)).toBe(true);
    expect(await a.joinAllSockets(agent, room)).toBe(true);
    expect(await b.joinAllSockets(agent, room)).toBe(false);
    expect(await b.leaveAllSockets(agent, room)).toBe(true);
    expect(await a.leaveAllSockets(agent, room)).toBe(false);
    expect(await a.join(agent, 'unknown-socket', room)).toBe(false);
    await Promise.all([a.disconnect(agent, 'sa'), b.disconnect(agent, 'sb')]);

    // Every key lives under REDIS_KEY_PREFIX.
    const keys = await admin.keys('*presence:*');
    expect(keys.filter((k) => k.includes(agent) && !k.startsWith(prefix))).toEqual([]);
  });

  it('never double-announces or loses an offline when nodes race on one agent', async () => {
    const nodes = await Promise.all([node(), node(), node()]);
    for (let round = 0; round < 30; round++) {
      const [agent, room] = [randomUUID(), randomUUID()];
      const connects = await Promise.all(nodes.map((n, i) => n.connect(agent, `s${round}-${i}`, [room])));
      expect(connects.filter((c) => c.firstInRooms.includes(room))).toHaveLength(1);
      expect(Math.max(...connects.map((c) => c.connections))).toBe(3);
      const leaves = await Promise.all(nodes.map((n, i) => n.disconnect(agent, `s${round}-${i}`)));
      expect(leaves.filter((rooms) => rooms.includes(room))).toHaveLength(1);
      expect(await nodes[0]!.onlineAgents([agent])).toEqual(new Set());
    }
  });

  it('sweeps the sockets of a node that stopped heartbeating, announcing each offline exactly once', async () => {
    const [survivor1, survivor2, doomed] = await Promise.all([node(), node(), node()]);
    const [agent, both, elsewhere, room] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await doomed.connect(agent, 'd1', [room]);
    await doomed.connect(both, 'd2', [room]);
    // Enough sockets for several sweep batches.
    const crowd = Array.from({ length: 250 }, () => randomUUID());
    await Promise.all(crowd.map((id, i) => doomed.connect(id, `crowd-${i}`, [room])));
    await survivor1.connect(both, 's1', [room]); // also on a living node: stays online
    await survivor1.connect(elsewhere, 's2', [room]);
    // The doomed node never starts its heartbeat: as if it were SIGKILLed right after connecting.
    const seen1 = started(survivor1, () => [{ agentId: both, socketId: 's1', roomIds: [room] }, { agentId: elsewhere, socketId: 's2', roomIds: [room] }]);
    const seen2 = started(survivor2);

    const t0 = Date.now();
    await waitUntil('the dead node swept', async () => (await survivor1.onlineAgents([agent])).size === 0, 10_000, 50);
    expect(Date.now() - t0).toBeLessThan(3000); // ttl 1 s, sweeps every ~333 ms
    await Promise.all([survivor1.tick(), survivor2.tick()]);
    const offline = [...seen1, ...seen2].filter((a) => a.status === 'offline');
    expect(offline.map((a) => a.agentId).sort()).toEqual([agent, ...crowd].sort());
    expect(offline.every((a) => a.roomId === room)).toBe(true);
    expect(await survivor2.onlineAgents([agent, both, elsewhere])).toEqual(new Set([both, elsewhere]));
    expect(await admin.zscore(`${prefix}presence:nodes`, doomed.nodeId)).toBeNull();
    expect(await admin.exists(`${prefix}presence:node:${doomed.nodeId}`)).toBe(0);
  });

  it('leaves alone, in a sweep in progress, the sockets a node that was only paused registered again', async () => {
    const [sweeper, paused] = await Promise.all([node(), node()]);
    const [kept, lost, room] = [randomUUID(), randomUUID(), randomUUID()];
    await paused.connect(kept, 'p1', [room]);
    await paused.connect(lost, 'p2', [room]);
    // A sweeper has taken the node out of `nodes` and set its sockets aside, and not removed them yet...
    const key = (k: string): string => `${prefix}presence:${k}`;
    await admin.zrem(key('nodes'), paused.nodeId);
    await admin.rename(key(`node:${paused.nodeId}`), key(`dead:${paused.nodeId}`));
    await admin.sadd(key('dead'), paused.nodeId);
    // ...when the node, back from its pause, registers one of its sockets again (reconcile).
    await paused.connect(kept, 'p1', [room]);

    const seen = started(sweeper);
    await sweeper.tick();
    expect(seen).toEqual([{ agentId: lost, roomId: room, status: 'offline' }]);
    expect(await sweeper.onlineAgents([kept, lost])).toEqual(new Set([kept]));
    expect(await admin.smembers(key('dead'))).not.toContain(paused.nodeId);
    expect(await admin.zscore(key('nodes'), paused.nodeId)).not.toBeNull();
    expect(await paused.disconnect(kept, 'p1')).toEqual([room]);
  });

  it('re-registers its live sockets when Redis lost them, and drops registrations of sockets it no longer has', async () => {
    const tracker = await node();
    const [agent, gone, room] = [randomUUID(), randomUUID(), randomUUID()];
    await tracker.connect(agent, 'live', [room]);
    await tracker.connect(gone, 'stale', [room]);
    // Only `live` is still a socket of this node (the disconnect of `stale` never reached Redis).
    const seen = started(tracker, () => [{ agentId: agent, socketId: 'live', roomIds: [room] }]);
    await tracker.tick();
    expect(seen).toEqual([]); // nothing lost yet: no reconcile

    // Redis restarted empty (simulated by deleting this prefix's keys) and the node's entry is gone.
    await deleteRedisKeys(REDIS_TEST_URL, prefix);
    await admin.sadd(`${prefix}presence:node:${tracker.nodeId}`, 'stale'); // and one stale registration survived
    await admin.hset(`${prefix}presence:socket:stale`, 'agent', gone, 'node', tracker.nodeId);
    await admin.sadd(`${prefix}presence:socket:stale:rooms`, room);
    await admin.sadd(`${prefix}presence:agent:${gone}`, 'stale');
    await admin.sadd(`${prefix}presence:agent:${gone}:room:${room}`, 'stale');
    expect(await tracker.onlineAgents([agent, gone])).toEqual(new Set([gone]));

    await tracker.tick(); // the heartbeat finds its entry missing, then reconciles
    expect(seen).toEqual(expect.arrayContaining([
      { agentId: agent, roomId: room, status: 'online' },
      { agentId: gone, roomId: room, status: 'offline' },
    ]));
    expect(seen).toHaveLength(2);
    expect(await tracker.onlineAgents([agent, gone])).toEqual(new Set([agent]));
    expect(await tracker.disconnect(agent, 'live')).toEqual([room]);
  });

  it('refuses with UNAVAILABLE, without hanging, while Redis is unreachable', async () => {
    const down = new Redis(`redis://127.0.0.1:${await freePort()}`, { ...REDIS_CLIENT_DEFAULTS, retryStrategy: () => 1000 });
    down.on('error', () => undefined);
    clients.push(down);
    const tracker = createRedisPresence(down, { keyPrefix: prefix, ttlSeconds: 1, logger });
    const t0 = Date.now();
    for (const attempt of [
      () => tracker.connect(randomUUID(), 'x', []),
      () => tracker.disconnect(randomUUID(), 'x'),
      () => tracker.onlineAgents([randomUUID()]),
    ]) {
      const err = await attempt().then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('UNAVAILABLE');
    }
    expect(Date.now() - t0).toBeLessThan(1000);
    // Its timer keeps failing quietly; stopping is prompt.
    tracker.start({ localSockets: () => [], announce: () => undefined });
    await waitToProveAbsence(50); // a failing tick would throw out of the timer by now
    await tracker.stop();
  });
});

describe('presence configuration', () => {
  it('reads PRESENCE_TTL_SECONDS: 15 by default, 2 to 3600', () => {
    expect(buildConfig({}).presenceTtlSeconds).toBe(15);
    expect(buildConfig(readEnv({ PRESENCE_TTL_SECONDS: '3' })).presenceTtlSeconds).toBe(3);
    for (const bad of ['1', '3601', 'soon', '2.5']) {
      expect(() => buildConfig({ PRESENCE_TTL_SECONDS: bad })).toThrow(/^PRESENCE_TTL_SECONDS must be/);
    }
  });
});
