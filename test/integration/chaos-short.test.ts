import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmsClient, type Message } from '@agent-messaging/client';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startCluster, type Cluster, type NodeProcess } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { sleep, waitUntil } from '../helpers/wait.js';
import { connect, type ClientSocket, type Payload } from '../helpers/ws.js';

// The chaos run (docs/reliability.md "Chaos run"): three nodes on PostgreSQL and Redis, each node
// reaching PostgreSQL through a TCP proxy of its own, node C reaching Redis through one too. Under a
// steady load of sends to two rooms, one cycle of faults: node C's Redis path goes silent; node C's
// PostgreSQL path goes silent; PostgreSQL pauses for every node; node B is killed (-9) and restarted;
// node A is frozen (SIGSTOP); then all of these at once. Then the four checks: every acknowledged send
// is stored once; seq is gapless; every member of every room receives every stored message once and
// in order, through the client library and through a plain Socket.IO client that follows
// docs/catch-up.md's recipe (room:positions included); nothing is stuck afterwards. And plain
// Socket.IO clients with no code beyond the documented events, connecting to node C while its Redis
// is cut, are turned away with `UNAVAILABLE` and a transport close, come back by themselves once
// Redis does, and receive live every message stored after their `agent:hello-ack`.
//
// CHAOS_SECONDS=n repeats the cycle until n seconds have passed (one cycle, about 30 s, by default);
// CHAOS_RATE=n sets the sends per second of the two senders together (20 by default).
const ready = await servicesAvailable('chaos run', ['postgres', 'redis']);
const CHAOS_SECONDS = Number(process.env.CHAOS_SECONDS ?? 0);
const CHAOS_RATE = Number(process.env.CHAOS_RATE ?? 20);
/** How long each fault lasts. */
const FAULT_MS = 3000;
/** Quiet time after each fault. */
const CALM_MS = 1500;
const t0 = Date.now();
/** Progress on stderr: a hung run shows where it stopped. */
const note = (what: string): void => void process.stderr.write(`[chaos ${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}\n`);

/**
 * A plain Socket.IO client using only the documented events (socket.io-client's own reconnection, no
 * catch-up): what it went through, and the messages it received live.
 */
class PlainReceiver {
  /** `error <code>`, `disconnect <reason>` and `hello`, in order. */
  readonly events: string[] = [];
  readonly hellos: Payload[] = [];
  /** What came as `message:new`, by id. */
  readonly live = new Map<string, Payload>();
  readonly socket: ClientSocket;

  constructor(url: string, jwt: string, readonly roomIds: string[]) {
    this.socket = connect(url, jwt, { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 1000 });
    this.socket.on('error', (e: Payload) => this.events.push(`error ${e.code}`));
    this.socket.on('disconnect', (reason: string) => this.events.push(`disconnect ${reason}`));
    this.socket.on('agent:hello-ack', (hello: Payload) => {
      this.events.push('hello');
      this.hellos.push(hello);
    });
    this.socket.on('message:new', (m: Payload) => this.live.set(m.id, m));
  }

  /** A message of `sender` numbered above its first hello's positions came live: broadcasts from that sender's node reach it. */
  heardFrom(sender: string): boolean {
    const hello = this.hellos[0];
    return hello !== undefined && [...this.live.values()].some((m) => m.body.startsWith(`${sender} `) && m.seq > (hello.lastSeqs[m.roomId] ?? 0));
  }

  /** The ids of `messages` in its rooms that it did not receive live. */
  missed(messages: readonly Message[]): string[] {
    return messages.filter((m) => this.roomIds.includes(m.roomId) && !this.live.has(m.id)).map((m) => m.id);
  }
}

/** A plain Socket.IO client following docs/catch-up.md's recipe, steps 1 to 4, for several rooms. */
class RecipeClient {
  /** Per room, what the recipe delivered (live or synced), in order. */
  readonly delivered = new Map<string, Payload[]>();
  /** Ids that came as a live `message:new` (synced or not). */
  readonly live = new Set<string>();
  /** The rooms of the last `room:positions`. */
  lastPositions: string[] = [];
  private readonly position = new Map<string, number>();
  private readonly syncing = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  readonly socket: ClientSocket;

  constructor(url: string, jwt: string, private readonly roomIds: string[]) {
    for (const roomId of roomIds) {
      this.delivered.set(roomId, []);
      this.position.set(roomId, 0);
    }
    this.socket = connect(url, jwt, { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 1000 });
    this.socket.on('agent:hello-ack', (hello: Payload) => this.positions(hello.lastSeqs));
    this.socket.on('room:positions', (p: Payload) => {
      this.lastPositions = Object.keys(p.lastSeqs).sort();
      this.positions(p.lastSeqs);
    });
    this.socket.on('message:new', (m: Payload) => {
      if (!this.position.has(m.roomId)) return;
      this.live.add(m.id);
      if (m.seq <= this.at(m.roomId)) return;
      if (m.seq === this.at(m.roomId) + 1 && !this.syncing.has(m.roomId)) this.accept(m);
      else this.behind(m.roomId, m.seq);
    });
  }

  private at(roomId: string): number {
    return this.position.get(roomId) ?? 0;
  }

  private positions(lastSeqs: Record<string, number>): void {
    for (const roomId of this.roomIds) this.behind(roomId, lastSeqs[roomId] ?? 0);
  }

  private accept(m: Payload): void {
    if (m.seq !== this.at(m.roomId) + 1) return;
    this.position.set(m.roomId, m.seq);
    this.delivered.get(m.roomId)!.push(m);
  }

  private behind(roomId: string, lastSeq: number): void {
    if (lastSeq <= this.at(roomId)) return;
    if (this.syncing.has(roomId)) {
      this.again.add(roomId);
      return;
    }
    const sync = (async () => {
      do {
        this.again.delete(roomId);
        for (;;) {
          const page = await new Promise<Payload>((resolve) => {
            this.socket.timeout(5000).emit('room:sync', { roomId, afterSeq: this.at(roomId), limit: 100 }, (err: unknown, ack: Payload) => resolve(err ? null : ack));
          });
          if (!page || page.error) {
            await sleep(300);
            continue;
          }
          for (const m of page.messages) this.accept(m);
          if (!page.hasMore) break;
        }
      } while (this.again.has(roomId));
    })().finally(() => this.syncing.delete(roomId));
    this.syncing.set(roomId, sync);
  }
}

describe.skipIf(!ready)('chaos run on PostgreSQL and Redis', () => {
  let cluster: Cluster;
  let redisProxy: TcpProxy;
  /** Per node, its path to PostgreSQL. */
  const pgProxies: TcpProxy[] = [];
  let api: Api;
  let admin: TestAgent;
  let members: TestAgent[];
  let rooms: TestRoom[];
  const libraryClients: AmsClient[] = [];
  const recipeClients: RecipeClient[] = [];
  const plainReceivers: PlainReceiver[] = [];

  beforeAll(async () => {
    const env = { POSITION_CHECK_INTERVAL_MS: '5000', RATE_LIMIT_AGENT_PER_MINUTE: '1000000', RATE_LIMIT_ANON_PER_MINUTE: '1000000' };
    cluster = await startCluster({ nodes: 0, env });
    note('database created');
    const redis = new URL(cluster.redisUrl);
    redisProxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    const database = new URL(cluster.database.url);
    for (const name of ['node-A', 'node-B', 'node-C']) {
      const proxy = await startTcpProxy({ host: database.hostname, port: Number(database.port || 5432) });
      pgProxies.push(proxy);
      const url = new URL(database);
      url.hostname = '127.0.0.1';
      url.port = String(proxy.port);
      await cluster.addNode({ name, env: { DATABASE_URL: url.toString(), ...(name === 'node-C' ? { REDIS_URL: `redis://127.0.0.1:${redisProxy.port}` } : {}) } });
    }
    note('three nodes ready');
    api = new Api(cluster.nodes[0]!.url);
    admin = await newAdmin(api);
    members = await Promise.all(Array.from({ length: 8 }, () => newAgent(api)));
    // Room 0: all eight; room 1: the first library receiver, the first two recipe clients, one sender.
    rooms = [await newRoom(api, admin, members), await newRoom(api, admin, [members[0]!, members[3]!, members[4]!, members[7]!])];
  }, 180_000);
  afterAll(async () => {
    await Promise.all(libraryClients.map((c) => c.close()));
    for (const c of [...recipeClients, ...plainReceivers]) c.socket.disconnect();
    for (const node of cluster?.nodes ?? []) if (node.pid !== undefined && node.alive()) process.kill(node.pid, 'SIGCONT');
    await cluster?.close();
    await Promise.all([redisProxy, ...pgProxies].map((p) => p?.close()));
  });

  it('acknowledged = stored once, seq gapless, every member receives everything once and in order, nothing stuck', async () => {
    const [a, b, c] = cluster.nodes as [NodeProcess, NodeProcess, NodeProcess];
    const roomsOf = (member: number): string[] => rooms.filter((r) => r.id === rooms[0]!.id || [0, 3, 4, 7].includes(member)).map((r) => r.id);
    // Receivers: per node, one client-library client and one plain recipe client (members 0..5).
    const received = new Map<AmsClient, Message[]>();
    const libraryRooms = new Map<AmsClient, string[]>();
    for (const [i, node] of [a, b, c].entries()) {
      const library = new AmsClient({ url: node.url, apiToken: members[i]!.apiToken });
      libraryClients.push(library);
      const list: Message[] = [];
      library.on('message', (m) => list.push(m));
      received.set(library, list);
      libraryRooms.set(library, roomsOf(i));
      await library.connect();
      recipeClients.push(new RecipeClient(node.url, members[3 + i]!.jwt, roomsOf(3 + i)));
    }
    // Senders: members 6 (room 0) and 7 (both rooms), through the library (it retries with the same clientMsgId).
    const senders = [new AmsClient({ url: a.url, apiToken: members[6]!.apiToken }), new AmsClient({ url: c.url, apiToken: members[7]!.apiToken })];
    libraryClients.push(...senders);
    await Promise.all(senders.map((s) => s.connect()));
    const acknowledged: Message[] = [];
    const pending: Promise<void>[] = [];
    /** Per acknowledged message, how many sends had started before its own. */
    const startedBefore = new Map<string, number>();
    let sending = true;
    const everyMs = (1000 * senders.length) / CHAOS_RATE;
    const load = senders.map(async (sender, s) => {
      for (let i = 0; sending; i++) {
        const roomId = s === 1 && i % 2 === 1 ? rooms[1]!.id : rooms[0]!.id;
        const before = pending.length;
        pending.push(sender.send(roomId, `sender ${s} message ${i}`).then((m) => {
          startedBefore.set(m.id, before);
          acknowledged.push(m);
        }));
        await sleep(everyMs);
      }
    });

    const fault = async (name: string, start: () => void, end: () => void): Promise<void> => {
      note(`${name}; ${acknowledged.length} acknowledged, ${pending.length} sent`);
      start();
      await sleep(FAULT_MS);
      end();
      await sleep(CALM_MS);
    };
    const began = Date.now();
    let cycles = 0;
    /** How many sends had started when node C was back from its first Redis cut. */
    let recovered = 0;
    await sleep(CALM_MS);
    do {
      cycles++;
      // Node C's Redis path goes silent; in the first cycle two plain receivers connect to C meanwhile
      // (members 2 and 7: room 0, and both rooms).
      await fault('C Redis cut', () => {
        redisProxy.blackhole();
        if (cycles === 1) plainReceivers.push(...[2, 7].map((member) => new PlainReceiver(c.url, members[member]!.jwt, roomsOf(member))));
      }, () => redisProxy.restore());
      if (cycles === 1) {
        // Turned away for a passing reason: the error, then a transport close (never the final
        // "io server disconnect"), retried by socket.io-client itself until Redis is back.
        await waitUntil('the plain receivers on C back by themselves', () => plainReceivers.every((r) => r.hellos.length > 0), 30_000, 100);
        for (const r of plainReceivers) {
          expect(r.events.slice(0, 2)).toEqual(['error UNAVAILABLE', 'disconnect transport close']);
          expect(r.events.filter((e) => e.startsWith('disconnect') && e !== 'disconnect transport close')).toEqual([]);
        }
        // Node C is back once broadcasts from node A reach it again: its adapter's subscriber, cut
        // silently, may reconnect after its command connection (redis-watchdog.ts); what is published
        // in between reaches the recipe clients through room:positions, not these receivers.
        await waitUntil('a broadcast from node A on the plain receivers', () => plainReceivers.every((r) => r.heardFrom('sender 0')), 30_000, 50);
        recovered = pending.length;
        note('plain receivers on C back');
      }
      await fault('C PostgreSQL cut', () => pgProxies[2]!.blackhole(), () => pgProxies[2]!.restore()); // node C's PostgreSQL path goes silent
      await fault('PostgreSQL paused', () => pgProxies.forEach((p) => p.pause()), () => pgProxies.forEach((p) => p.resume())); // PostgreSQL paused for all
      note('B kill -9 and restart');
      await b.restart(); // kill -9 and start again
      await sleep(CALM_MS);
      await fault('A SIGSTOP', () => process.kill(a.pid!, 'SIGSTOP'), () => process.kill(a.pid!, 'SIGCONT'));
      if (cycles === 1) {
        // Nothing has cut node C from Redis since it recovered: every message sent since then reached
        // them live (a broadcast is sent before the send is acknowledged).
        const sent = acknowledged.filter((m) => startedBefore.get(m.id)! >= recovered);
        await waitUntil('the plain receivers have every message since their hello', () => plainReceivers.every((r) => r.missed(sent).length === 0), 10_000, 100).catch((err: Error) => {
          throw new Error(`${err.message}: missing ${plainReceivers.map((r) => r.missed(sent).length).join(' and ')} of ${sent.length}; events ${plainReceivers.map((r) => r.events.join(', ')).join(' | ')}`);
        });
        note(`plain receivers complete (${sent.length} acknowledged)`);
      }
      // All at once: B killed and restarting while A is frozen, C cut from Redis and PostgreSQL, PostgreSQL paused for A and B.
      note('all at once');
      redisProxy.blackhole();
      pgProxies[2]!.blackhole();
      pgProxies[0]!.pause();
      pgProxies[1]!.pause();
      process.kill(a.pid!, 'SIGSTOP');
      const restarting = b.restart();
      await sleep(FAULT_MS);
      process.kill(a.pid!, 'SIGCONT');
      pgProxies[0]!.resume();
      pgProxies[1]!.resume();
      pgProxies[2]!.restore();
      redisProxy.restore();
      await restarting;
      await sleep(CALM_MS);
    } while (Date.now() - began < CHAOS_SECONDS * 1000);
    sending = false;
    await Promise.all(load);
    note(`faults over; ${acknowledged.length} of ${pending.length} acknowledged`);
    await waitUntil('every send acknowledged', () => acknowledged.length === pending.length, 60_000, 100).catch((err: Error) => {
      throw new Error(`${err.message} (${acknowledged.length} of ${pending.length})\n${cluster.nodes.map((n) => `${n.name}:\n${n.logs()}`).join('\n')}`);
    });
    note('every send acknowledged');

    // 1. acknowledged = stored once; 2. seq gapless (in each room).
    const stored = new Map<string, Payload[]>();
    for (const room of rooms) {
      const list: Payload[] = [];
      for (let afterSeq = 0; ;) {
        const page = await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=${afterSeq}&limit=100`, { jwt: admin.jwt });
        expect(page.status).toBe(200);
        list.push(...page.body.messages);
        if (!page.body.hasMore) break;
        afterSeq = page.body.messages.at(-1).seq;
      }
      expect(list.map((m) => m.seq)).toEqual(list.map((_, i) => i + 1));
      stored.set(room.id, list);
    }
    const all = [...stored.values()].flat();
    const storedIds = new Set(all.map((m) => m.id));
    expect(storedIds.size).toBe(all.length);
    expect(new Set(all.map((m) => m.clientMsgId)).size).toBe(all.length);
    const count = new Map<string, number>();
    for (const m of acknowledged) count.set(m.id, (count.get(m.id) ?? 0) + 1);
    for (const m of acknowledged) expect(storedIds.has(m.id)).toBe(true);
    expect([...count.values()].every((n) => n === 1)).toBe(true);
    // Every send was acknowledged (the library retries until it is), so stored = acknowledged.
    expect(acknowledged.length).toBe(all.length);
    expect(acknowledged.length).toBeGreaterThan(100);

    // 3. every member of every room receives every stored message once, in order (within the periodic check's bound).
    const idsOf = (roomId: string): string[] => stored.get(roomId)!.map((m) => m.id);
    const libraryHas = (library: AmsClient, roomId: string): string[] => received.get(library)!.filter((m) => m.roomId === roomId).map((m) => m.id);
    const complete = (): boolean =>
      [...libraryRooms].every(([library, ids]) => ids.every((roomId) => libraryHas(library, roomId).length >= idsOf(roomId).length)) &&
      recipeClients.every((r) => [...r.delivered].every(([roomId, list]) => list.length >= idsOf(roomId).length));
    await waitUntil('every receiver complete', complete, 30_000, 100);
    note('every receiver complete');
    for (const [library, ids] of libraryRooms) for (const roomId of ids) expect(libraryHas(library, roomId)).toEqual(idsOf(roomId));
    for (const r of recipeClients) for (const [roomId, list] of r.delivered) expect(list.map((m) => m.id)).toEqual(idsOf(roomId));

    // 4. nothing stuck: every node ready; a message sent now to each room reaches every receiver as a
    // live broadcast (each socket follows its rooms), and the positions a node sends a recipe client
    // name exactly its agent's rooms.
    for (const node of cluster.nodes) expect((await fetch(`${node.url}/readyz`)).status).toBe(200);
    // Cleared before the last sends: their new positions reach each recipe client in the next periodic run.
    for (const r of recipeClients) r.lastPositions = [];
    const last = await Promise.all(rooms.map((room) => senders[1]!.send(room.id, 'after the chaos')));
    const nodeNames = ['A', 'B', 'C'];
    const missing = (): string[] => [
      ...[...libraryRooms].flatMap(([library, ids], i) => ids.filter((roomId) => !libraryHas(library, roomId).includes(last[rooms.findIndex((r) => r.id === roomId)]!.id)).map((roomId) => `library on ${nodeNames[i]}, room ${rooms.findIndex((r) => r.id === roomId)}`)),
      ...recipeClients.flatMap((r, i) => last.filter((m) => r.delivered.has(m.roomId) && !r.live.has(m.id)).map((m) => `recipe on ${nodeNames[i]}, room ${rooms.findIndex((x) => x.id === m.roomId)}${r.delivered.get(m.roomId)!.some((d) => d.id === m.id) ? ' (synced, not live)' : ''}`)),
      ...plainReceivers.flatMap((r, i) => last.filter((m) => r.roomIds.includes(m.roomId) && !r.live.has(m.id)).map((m) => `plain receiver ${i} on C, room ${rooms.findIndex((x) => x.id === m.roomId)}`)),
    ];
    await waitUntil('the last messages everywhere, live', () => missing().length === 0, 4000, 50).catch(async (err: Error) => {
      const first = missing();
      await sleep(12_000);
      throw new Error(`${err.message}: missing ${first.join('; ')}; 12 s later still missing: ${missing().join('; ') || 'none'}\n${cluster.nodes.map((n) => `${n.name}:\n${n.logs().split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-15).join('\n')}`).join('\n')}`);
    });
    await waitUntil('a periodic position check', () => recipeClients.every((r) => r.lastPositions.length > 0), 15_000, 100);
    for (const [i, r] of recipeClients.entries()) expect(r.lastPositions).toEqual([...roomsOf(3 + i)].sort());
    process.stdout.write(`chaos run: ${cycles} cycle(s) in ${Math.round((Date.now() - began) / 1000)} s, ${acknowledged.length} sends acknowledged, ${all.length} stored, library receivers ${[...received.values()].reduce((n, l) => n + l.length, 0)} deliveries, recipe receivers ${recipeClients.reduce((n, r) => n + [...r.delivered.values()].reduce((k, l) => k + l.length, 0), 0)} deliveries\n`);
  }, 40 * 60_000);
});
