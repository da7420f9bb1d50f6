import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { BusPayload, ClusterBus } from '../../src/cluster/bus.js';
import { createMemoryBus } from '../../src/cluster/memory-bus.js';
import { createRedisBus } from '../../src/cluster/redis-bus.js';
import { REDIS_TEST_URL } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { sleep, waitUntil } from '../helpers/wait.js';

// The cluster bus (src/cluster): what nodes tell each other, acknowledged.

interface Warning {
  obj: object;
  msg: string;
}
const recorder = (): { warn(obj: object, msg: string): void; warnings: Warning[] } => {
  const warnings: Warning[] = [];
  return { warnings, warn: (obj, msg) => void warnings.push({ obj, msg }) };
};

describe('the memory bus (one node)', () => {
  it('runs every handler of the topic, in order, before publish resolves; a failing one does not stop the others', async () => {
    const log = recorder();
    const bus = createMemoryBus(log);
    const seen: string[] = [];
    bus.subscribe('membership.removed', async ({ roomId }) => {
      await sleep(5); // a handler that takes a while
      seen.push(`a:${roomId}`);
    });
    bus.subscribe('membership.removed', () => {
      throw new Error('boom');
    });
    bus.subscribe('membership.removed', ({ agentIds }) => void seen.push(`c:${agentIds.join()}`));
    bus.subscribe('token.revoked', () => void seen.push('other topic'));
    await bus.publish('membership.removed', { roomId: 'r', agentIds: ['x'] });
    expect(seen).toEqual(['a:r', 'c:x']);
    expect(log.warnings.map((w) => w.msg)).toEqual(['cluster bus handler failed']);
    expect(bus.live).toBe(true);
  });
});

const ready = await servicesAvailable('cluster bus on Redis', ['redis']);

describe.skipIf(!ready)('the Redis bus (several nodes)', () => {
  const clients: Redis[] = [];
  const buses: ClusterBus[] = [];
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
    for (const c of clients.splice(0)) c.disconnect();
  });

  const node = async (keyPrefix: string, timeoutMs = 2000, followLingerMs?: number) => {
    const redis = new Redis(REDIS_TEST_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    await new Promise((resolve) => redis.once('ready', resolve));
    clients.push(redis);
    const log = recorder();
    const bus = await createRedisBus(redis, { keyPrefix, logger: log, timeoutMs, ...(followLingerMs === undefined ? {} : { followLingerMs }) });
    buses.push(bus);
    return { redis, bus, log };
  };
  const prefix = () => `ams-test-${randomBytes(5).toString('hex')}:`;

  it('publish resolves once every node ran its handlers: one message, acknowledged after all of them', async () => {
    const keyPrefix = prefix();
    const [a, b, c] = await Promise.all([node(keyPrefix), node(keyPrefix), node(keyPrefix)]);
    const done: string[] = [];
    for (const [name, n] of [['a', a], ['b', b], ['c', c]] as const) {
      n.bus.subscribe('membership.removed', () => void done.push(`${name}:cache`));
      n.bus.subscribe('membership.removed', async () => {
        await sleep(name === 'c' ? 100 : 1); // node c's handler is the slow one
        done.push(`${name}:sockets`);
      });
    }
    const published: [string, unknown][] = [];
    const publish = a.redis.publish.bind(a.redis);
    a.redis.publish = ((channel: string, message: string) => {
      published.push([channel, JSON.parse(message)]);
      return publish(channel, message);
    }) as typeof a.redis.publish;

    await a.bus.publish('membership.removed', { roomId: 'room-1', agentIds: ['agent-1'] });
    expect(done.sort()).toEqual(['a:cache', 'a:sockets', 'b:cache', 'b:sockets', 'c:cache', 'c:sockets']);
    expect(a.log.warnings).toEqual([]);
    // The removal crossed once: one message for both jobs of every node.
    expect(published).toEqual([[`${keyPrefix}bus`, expect.objectContaining({ topic: 'membership.removed', payload: { roomId: 'room-1', agentIds: ['agent-1'] } })]]);
  });

  it('a payload that is not what its topic says is dropped on receipt, not acknowledged: the sender logs the timeout and goes on', async () => {
    const keyPrefix = prefix();
    const [a, b] = await Promise.all([node(keyPrefix, 300), node(keyPrefix, 300)]);
    const got: BusPayload<'token.revoked'>[] = [];
    b.bus.subscribe('token.revoked', (p) => void got.push(p));
    await a.bus.publish('token.revoked', { tokenId: 42 } as unknown as BusPayload<'token.revoked'>);
    expect(got).toEqual([]);
    expect(b.log.warnings.map((w) => w.msg)).toEqual(['cluster bus: message with an invalid payload ignored']);
    expect(a.log.warnings.map((w) => w.msg)).toEqual(['cluster bus: not acknowledged by every node in time; they apply it when they read it']);
  });

  it('a node that stops answering is waited for at most the one timeout', async () => {
    const keyPrefix = prefix();
    const [a, b] = await Promise.all([node(keyPrefix, 300), node(keyPrefix, 300)]);
    b.bus.subscribe('membership.added', () => new Promise(() => undefined)); // never finishes
    const started = Date.now();
    await a.bus.publish('membership.added', { roomId: 'r', agentIds: ['x'] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(a.log.warnings).toHaveLength(1);
  });

  it('is not live while its subscriber is down, and tells its listeners when it is live again', async () => {
    const { bus } = await node(prefix());
    expect(bus.live).toBe(true);
    let resumed = 0;
    bus.onResume(() => void resumed++);
    // Kill the bus's subscriber connection from the server side; it reconnects and subscribes again.
    const admin = new Redis(REDIS_TEST_URL);
    clients.push(admin);
    const list = (await admin.client('LIST')) as string;
    const subscribers = list.split('\n').filter((line) => / cmd=(p?subscribe|ssubscribe)/.test(line) && line.includes('sub=2'));
    for (const line of subscribers) await admin.client('KILL', 'ID', /id=(\d+)/.exec(line)![1]!);
    let sawDown = !bus.live;
    await waitUntil('the bus resumed', () => {
      sawDown ||= !bus.live;
      return resumed > 0;
    }, 5000, 5);
    expect(sawDown).toBe(true);
    expect(resumed).toBe(1);
    expect(bus.live).toBe(true);
  });

  it('a followed topic reaches only the nodes that follow it, from when follow resolves, until the linger after the last unfollow', async () => {
    const keyPrefix = prefix();
    const [a, b] = await Promise.all([node(keyPrefix), node(keyPrefix, 2000, 200)]);
    const admin = new Redis(REDIS_TEST_URL);
    clients.push(admin);
    const followedChannel = `${keyPrefix}bus:messages.committed`;
    const subscribers = async (): Promise<number> => ((await admin.pubsub('NUMSUB', followedChannel)) as [string, number])[1];
    const seen: string[] = [];
    b.bus.subscribe('messages.committed', ({ messages }) => void seen.push(messages[0]!.roomId));
    /** A round trip after a notification: b has read everything a sent before it (one connection, in order). */
    const roundTrip = async (): Promise<void> => a.bus.publish('webhook.created', { agentId: 'x' });
    const commit = (roomId: string): void => a.bus.notify('messages.committed', { messages: [{ roomId, senderId: 's' }] });

    // Nobody follows: the hint is published to nobody, b reads nothing.
    commit('unfollowed');
    await roundTrip();
    expect(await subscribers()).toBe(0);
    expect(seen).toEqual([]);

    await b.bus.follow('messages.committed');
    expect(await subscribers()).toBe(1);
    commit('followed');
    await waitUntil('b received the followed hint', () => seen.includes('followed'));

    // Nested follows: one unfollow leaves it followed; the last one ends it after the linger.
    await b.bus.follow('messages.committed');
    b.bus.unfollow('messages.committed');
    b.bus.unfollow('messages.committed');
    commit('lingering');
    await waitUntil('b still received during the linger', () => seen.includes('lingering'));
    await waitUntil('b unsubscribed after the linger', async () => (await subscribers()) === 0, 3000, 20);
    commit('after');
    await roundTrip();
    expect(seen).toEqual(['followed', 'lingering']);
    // A follow during a linger keeps the subscription; a later one subscribes again.
    await b.bus.follow('messages.committed');
    b.bus.unfollow('messages.committed');
    await b.bus.follow('messages.committed');
    await sleep(300); // past the linger the unfollow started: the follow after it cancelled it
    expect(await subscribers()).toBe(1);
    commit('again');
    await waitUntil('b received after following again', () => seen.includes('again'));
  });

  it('a followed topic is subscribed again when the subscriber reconnects', async () => {
    const keyPrefix = prefix();
    const [a, b] = await Promise.all([node(keyPrefix), node(keyPrefix)]);
    const seen: string[] = [];
    b.bus.subscribe('messages.committed', ({ messages }) => void seen.push(messages[0]!.roomId));
    await b.bus.follow('messages.committed');
    let resumed = 0;
    b.bus.onResume(() => void resumed++);
    const admin = new Redis(REDIS_TEST_URL);
    clients.push(admin);
    const list = (await admin.client('LIST')) as string;
    // b's subscriber: the one holding three channels (the bus, its acknowledgements, the followed topic).
    const line = list.split('\n').find((l) => / cmd=subscribe/.test(l) && l.includes('sub=3'));
    expect(line).toBeDefined();
    await admin.client('KILL', 'ID', /id=(\d+)/.exec(line!)![1]!);
    await waitUntil('b resumed', () => resumed > 0, 5000, 5);
    a.bus.notify('messages.committed', { messages: [{ roomId: 'after-reconnect', senderId: 's' }] });
    await waitUntil('b received after its reconnection', () => seen.includes('after-reconnect'));
  });
});
