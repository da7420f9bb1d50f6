import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AmsClient, type Message } from '@agent-messaging/client';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startCluster, type Cluster } from '../helpers/cluster.js';
import { servicesAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { sleep, waitUntil } from '../helpers/wait.js';
import { connect, type ClientSocket, type Payload } from '../helpers/ws.js';

// A short chaos run (docs/reliability.md "Chaos run"): three nodes on PostgreSQL and Redis, node C
// reaching Redis through a proxy. Under a steady load of sends: node C's Redis path goes silent and
// comes back, node B is killed (-9) and restarted, node A is frozen (SIGSTOP) and resumed. Then the
// four checks: every acknowledged send is stored once; seq is gapless; every member receives every
// stored message once and in order, through the client library and through a plain Socket.IO client
// that follows docs/catch-up.md's recipe (room:positions included); nothing is stuck afterwards.
const ready = await servicesAvailable('short chaos run', ['postgres', 'redis']);

/** A plain Socket.IO client following docs/catch-up.md's recipe, steps 1 to 4. */
class RecipeClient {
  readonly delivered: Payload[] = [];
  private position = 0;
  private syncing: Promise<void> | null = null;
  private again = false;
  readonly socket: ClientSocket;

  constructor(url: string, jwt: string, private readonly roomId: string) {
    this.socket = connect(url, jwt, { reconnection: true, reconnectionDelay: 200, reconnectionDelayMax: 1000 });
    this.socket.on('agent:hello-ack', (hello: Payload) => this.behind(hello.lastSeqs[roomId] ?? 0));
    this.socket.on('room:positions', (p: Payload) => this.behind(p.lastSeqs[roomId] ?? 0));
    this.socket.on('message:new', (m: Payload) => {
      if (m.roomId !== roomId || m.seq <= this.position) return;
      if (m.seq === this.position + 1 && !this.syncing) this.accept(m);
      else this.behind(m.seq);
    });
  }

  private accept(m: Payload): void {
    if (m.seq !== this.position + 1) return;
    this.position = m.seq;
    this.delivered.push(m);
  }

  private behind(lastSeq: number): void {
    if (lastSeq <= this.position) return;
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = (async () => {
      do {
        this.again = false;
        for (;;) {
          const page = await new Promise<Payload>((resolve) => {
            this.socket.timeout(5000).emit('room:sync', { roomId: this.roomId, afterSeq: this.position, limit: 100 }, (err: unknown, ack: Payload) => resolve(err ? null : ack));
          });
          if (!page || page.error) {
            await sleep(300);
            continue;
          }
          for (const m of page.messages) this.accept(m);
          if (!page.hasMore) break;
        }
      } while (this.again);
    })().finally(() => {
      this.syncing = null;
    });
  }
}

describe.skipIf(!ready)('short chaos run on PostgreSQL and Redis', () => {
  let cluster: Cluster;
  let proxy: TcpProxy;
  let api: Api;
  let admin: TestAgent;
  let members: TestAgent[];
  let room: TestRoom;
  const libraryClients: AmsClient[] = [];
  const recipeClients: RecipeClient[] = [];

  beforeAll(async () => {
    const env = { POSITION_CHECK_INTERVAL_MS: '5000', RATE_LIMIT_AGENT_PER_MINUTE: '1000000', RATE_LIMIT_ANON_PER_MINUTE: '1000000' };
    cluster = await startCluster({ nodes: 2, env });
    const redis = new URL(cluster.redisUrl);
    proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
    await cluster.addNode({ name: 'node-C', env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}` } });
    api = new Api(cluster.nodes[0]!.url);
    admin = await newAdmin(api);
    members = await Promise.all(Array.from({ length: 8 }, () => newAgent(api)));
    room = await newRoom(api, admin, members);
  }, 180_000);
  afterAll(async () => {
    await Promise.all(libraryClients.map((c) => c.close()));
    for (const c of recipeClients) c.socket.disconnect();
    for (const node of cluster?.nodes ?? []) if (node.pid !== undefined && node.alive()) process.kill(node.pid, 'SIGCONT');
    await cluster?.close();
    await proxy?.close();
  });

  it('acknowledged = stored once, seq gapless, every member receives everything once and in order, nothing stuck', async () => {
    const [a, b, c] = cluster.nodes;
    // Receivers: per node, one client-library client and one plain recipe client (members 0..5).
    const received = new Map<AmsClient, Message[]>();
    for (const [i, node] of [a!, b!, c!].entries()) {
      const library = new AmsClient({ url: node.url, apiToken: members[i]!.apiToken });
      libraryClients.push(library);
      const list: Message[] = [];
      library.on('message', (m) => list.push(m));
      received.set(library, list);
      await library.connect();
      recipeClients.push(new RecipeClient(node.url, members[3 + i]!.jwt, room.id));
    }
    // Senders: members 6 and 7, through the library (it retries with the same clientMsgId).
    const senders = [new AmsClient({ url: a!.url, apiToken: members[6]!.apiToken }), new AmsClient({ url: c!.url, apiToken: members[7]!.apiToken })];
    libraryClients.push(...senders);
    await Promise.all(senders.map((s) => s.connect()));
    const acknowledged: Message[] = [];
    const pending: Promise<void>[] = [];
    let sending = true;
    const load = senders.map(async (sender, s) => {
      for (let i = 0; sending; i++) {
        pending.push(sender.send(room.id, `sender ${s} message ${i}`).then((m) => void acknowledged.push(m)));
        await sleep(100);
      }
    });

    await sleep(2000);
    proxy.blackhole(); // node C's Redis path goes silent
    await sleep(5000);
    proxy.restore();
    await sleep(2000);
    await b!.restart(); // kill -9 and start again
    await sleep(2000);
    process.kill(a!.pid!, 'SIGSTOP');
    await sleep(3000);
    process.kill(a!.pid!, 'SIGCONT');
    await sleep(2000);
    sending = false;
    await Promise.all(load);
    await Promise.all(pending);

    // 1. acknowledged = stored once; 2. seq gapless.
    const stored: Payload[] = [];
    for (let afterSeq = 0; ;) {
      const page = await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=${afterSeq}&limit=100`, { jwt: admin.jwt });
      expect(page.status).toBe(200);
      stored.push(...page.body.messages);
      if (!page.body.hasMore) break;
      afterSeq = page.body.messages.at(-1).seq;
    }
    expect(stored.map((m) => m.seq)).toEqual(stored.map((_, i) => i + 1));
    const storedIds = stored.map((m) => m.id);
    expect(new Set(storedIds).size).toBe(stored.length);
    expect(new Set(stored.map((m) => m.clientMsgId)).size).toBe(stored.length);
    for (const m of acknowledged) expect(storedIds.filter((id) => id === m.id)).toHaveLength(1);
    expect(acknowledged.length).toBeGreaterThan(100);

    // 3. every member receives every stored message once, in order (within the periodic check's bound).
    await waitUntil('every receiver complete', () =>
      [...received.values()].every((list) => list.length >= stored.length) && recipeClients.every((r) => r.delivered.length >= stored.length), 30_000, 100);
    for (const list of received.values()) expect(list.map((m) => m.id)).toEqual(storedIds);
    for (const r of recipeClients) expect(r.delivered.map((m) => m.id)).toEqual(storedIds);

    // 4. nothing stuck: a message sent now reaches every receiver.
    const last = await senders[1]!.send(room.id, 'after the chaos');
    await waitUntil('the last message everywhere', () =>
      [...received.values()].every((list) => list.at(-1)?.id === last.id) && recipeClients.every((r) => r.delivered.at(-1)?.id === last.id), 15_000, 50);
  }, 240_000);
});
