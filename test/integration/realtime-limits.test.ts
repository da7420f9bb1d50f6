import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { createAbuseDetector, createEventBudget } from '../../src/limits/rate-limits.js';
import { testConfig } from '../helpers/config.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startTestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { connect, connectReady, disconnected, emitWithAck, record, waitFor, type Payload } from '../helpers/ws.js';
import { waitUntil } from '../helpers/wait.js';

const wsConfig = (overrides: Partial<Config['ws']>): Config['ws'] => ({ ...testConfig().ws, ...overrides });

/** The value of one sample line of the Prometheus exposition, e.g. `rate_limit_exceeded_total{transport="ws"}`. */
function sample(metrics: string, line: string): number {
  const found = metrics.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? Number.NaN : Number(found.slice(line.length + 1));
}

describe('the abuse detector', () => {
  it('trips only after more than N events in each of more than S consecutive one-second buckets', () => {
    let now = 10_000;
    const detector = createAbuseDetector(3, 2, () => now);
    const burst = (events: number): boolean => {
      let tripped = false;
      for (let i = 0; i < events; i++) tripped = detector.hit() || tripped;
      return tripped;
    };
    expect(burst(4)).toBe(false); // second 10: over (1)
    now += 1000;
    expect(burst(4)).toBe(false); // second 11: over (2), not more than 2 yet
    now += 1000;
    expect(burst(3)).toBe(false); // second 12: exactly at the rate is not over: the streak ends
    now += 1000;
    expect(burst(4)).toBe(false); // 13: over (1)
    now += 1000;
    expect(burst(4)).toBe(false); // 14: over (2)
    now += 2000;
    expect(burst(10)).toBe(false); // 16 after an idle second: over (1) again
    now += 1000;
    expect(burst(4)).toBe(false); // 17: (2)
    now += 1000;
    expect(burst(3)).toBe(false); // 18: not yet over...
    expect(burst(1)).toBe(true); // ...now over in a third consecutive second: trips at once
  });
});

describe("a connection's event budget", () => {
  it('admits N events in a one-second window that starts with the first event after the last window', () => {
    let now = 10_500;
    const budget = createEventBudget(3, () => now);
    const take = (events: number): boolean[] => Array.from({ length: events }, () => budget.take());
    expect(take(4)).toEqual([true, true, true, false]); // window 10.5 s to 11.5 s
    now = 11_499;
    expect(take(1)).toEqual([false]); // still that window, refusals count too
    now = 11_500;
    expect(take(4)).toEqual([true, true, true, false]); // a new window from here
    now = 20_000;
    expect(take(3)).toEqual([true, true, true]);
  });
});

describe('WebSocket limits', () => {
  const { server, api } = useTestServer({ config: { ws: wsConfig({ eventsPerSecond: 3, maxConnectionsPerAgent: 2 }) } });
  let admin: TestAgent;
  let agent: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    admin = await newAdmin(api);
    agent = await newAgent(api);
    room = await newRoom(api, admin, [agent]);
  });

  /**
   * A member of the room whose event budgets (per connection and per agent) are untouched: for the
   * tests that are not about rate limits, after the ones that spend `agent`'s budget on purpose.
   */
  async function freshMember(): Promise<TestAgent> {
    const member = await newAgent(api);
    const added = await api.post(`/rooms/${room.id}/members`, { agentId: member.id }, { headers: { 'x-agent-id': admin.id } });
    expect(added.status).toBe(201);
    return member;
  }

  it('refuses events over the per-connection rate: RATE_LIMIT_EXCEEDED in the ack and as an error event with requestId', async () => {
    const { socket } = await connectReady(server.url, agent.jwt);
    const errors = record(socket, 'error');
    const acks = await Promise.all(Array.from({ length: 10 }, (_, i) => emitWithAck(socket, 'room:list', { requestId: `q${i}` })));
    const refused = acks.map((ack: Payload, i) => (ack.error ? i : -1)).filter((i) => i >= 0);
    const served = acks.filter((ack: Payload) => ack.rooms !== undefined);
    // At most 3 per second: 10 at once leaves at most 6 served even across a bucket boundary.
    expect(served.length).toBeGreaterThanOrEqual(1);
    expect(served.length).toBeLessThanOrEqual(6);
    expect(served.length + refused.length).toBe(10);
    for (const i of refused) expect(acks[i]).toEqual({ error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String) } });
    await waitUntil('an error event for every refused event', () => errors.length === refused.length);
    expect(errors).toEqual(refused.map((i) => ({ code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String), requestId: `q${i}` })));
    socket.disconnect();
  });

  it('does not process a refused event: only the admitted messages are stored and broadcast', async () => {
    const { socket } = await connectReady(server.url, agent.jwt);
    const errors = record(socket, 'error');
    const delivered = record(socket, 'message:new');
    for (let i = 0; i < 10; i++) socket.emit('message:send', { roomId: room.id, body: `burst ${i}`, requestId: `s${i}` });
    await waitUntil('every event answered', () => errors.length + delivered.length === 10);
    expect(errors.length).toBeGreaterThanOrEqual(4);
    expect(errors.every((e: Payload) => e.code === 'RATE_LIMIT_EXCEEDED' && /^s\d$/.test(e.requestId))).toBe(true);
    const history = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: agent.jwt });
    const stored = history.body.messages.filter((m: Payload) => m.body.startsWith('burst ')).map((m: Payload) => m.body).sort();
    expect(stored).toEqual(delivered.map((m: Payload) => m.body).sort());
    // The refused ones are exactly the ones not stored.
    const refusedIds = new Set(errors.map((e: Payload) => e.requestId.slice(1)));
    expect(stored.map((b: string) => b.slice('burst '.length)).some((i: string) => refusedIds.has(i))).toBe(false);
    socket.disconnect();
  });

  it('refuses a connection beyond the per-agent connection limit', async () => {
    const one = await newAgent(api);
    const a = await connectReady(server.url, one.jwt);
    const b = await connectReady(server.url, one.jwt);
    const third = connect(server.url, one.jwt);
    const error = waitFor(third, 'error');
    const gone = disconnected(third);
    expect(await error).toEqual({ code: 'RATE_LIMIT_EXCEEDED', message: expect.stringContaining('connections') });
    expect(await gone).toBe('io server disconnect');
    expect(a.socket.connected && b.socket.connected).toBe(true);
    // Once one goes, a new one fits again.
    a.socket.disconnect();
    await waitUntil('the server to count one connection', async () => (await server.app.ctx.presence.connectionCount(one.id)) === 1);
    const again = await connectReady(server.url, one.jwt);
    again.socket.disconnect();
    b.socket.disconnect();
  });

  it('carries a 16384-character body of 4-byte emoji; one more character is a validation error', async () => {
    const { socket } = await connectReady(server.url, (await freshMember()).jwt);
    const body = '😀'.repeat(16_384);
    expect(Buffer.byteLength(body)).toBe(65_536);
    const arrived = waitFor(socket, 'message:new', (m) => m.body.length === body.length);
    const ack = await emitWithAck(socket, 'message:send', { roomId: room.id, body });
    expect(ack).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    expect((await arrived).body).toBe(body);
    expect(await emitWithAck(socket, 'message:send', { roomId: room.id, body: `${body}😀` }))
      .toEqual({ error: { code: 'VALIDATION_ERROR', message: expect.stringContaining('16384') } });
    const page = await emitWithAck(socket, 'message:history', { roomId: room.id, limit: 5 });
    expect(page.messages.find((m: Payload) => m.id === ack.messageId).body).toBe(body);
    socket.disconnect();
  });

  it('drops a connection that sends a multi-MiB frame, without harming the server', async () => {
    const sender = await freshMember();
    const { socket } = await connectReady(server.url, sender.jwt);
    const bystander = await connectReady(server.url, (await newAgent(api)).jwt);
    const gone = disconnected(socket);
    socket.emit('message:send', { roomId: room.id, body: 'x'.repeat(4 * 1024 * 1024) });
    expect(await gone).toMatch(/^transport (close|error)$/);
    // Everyone else is fine, and so is the server.
    expect(bystander.socket.connected).toBe(true);
    expect(await emitWithAck(bystander.socket, 'room:list')).toEqual({ rooms: [] });
    expect((await api.get('/healthz')).status).toBe(200);
    const fresh = await connectReady(server.url, sender.jwt);
    expect(await emitWithAck(fresh.socket, 'message:send', { roomId: room.id, body: 'after the big one' })).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    fresh.socket.disconnect();
    bystander.socket.disconnect();
  });

  it('exposes the WebSocket metrics', async () => {
    const member = await freshMember();
    const { socket } = await connectReady(server.url, member.jwt);
    await emitWithAck(socket, 'message:send', { roomId: room.id, body: 'counted' });
    const text = (await api.get('/metrics')).body as string;
    expect(sample(text, 'service_websocket_latency_seconds_count{event="message:send"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'service_websocket_latency_seconds_count{event="room:list"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'service_agents_connected')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'rate_limit_exceeded_total{transport="ws"}')).toBeGreaterThanOrEqual(1);
    // Counted once per message whichever transport sent it (by the metrics publisher, not here).
    const history = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: member.jwt });
    expect(sample(text, `service_messages_total{room="${room.id}"}`)).toBe(history.body.messages.length);
    socket.disconnect();
    await waitUntil('service_agents_connected to fall to 0', async () => sample((await api.get('/metrics')).body as string, 'service_agents_connected') === 0);
  });
});

describe('WebSocket sustained abuse', () => {
  const { server } = useTestServer({ config: { ws: wsConfig({ eventsPerSecond: 2, abuseEventsPerSecond: 4, abuseSeconds: 1 }) } });

  it('disconnects a connection above the abuse rate for longer than the abuse seconds (refused events count too)', async () => {
    const api = new Api(server.url);
    const agent = await newAgent(api);
    const { socket } = await connectReady(server.url, agent.jwt);
    const errors = record(socket, 'error');
    const gone = disconnected(socket, 10_000);
    // 10 events every 100 ms: far above 4/s in every bucket; all but 2 per second are refused.
    const spam = setInterval(() => {
      for (let i = 0; i < 10; i++) socket.emit('room:list', { requestId: 'spam' });
    }, 100);
    try {
      expect(await gone).toBe('io server disconnect');
    } finally {
      clearInterval(spam);
    }
    expect(errors.some((e: Payload) => e.code === 'RATE_LIMIT_EXCEEDED' && /^Disconnected/.test(e.message))).toBe(true);
    expect(errors.filter((e: Payload) => e.code === 'RATE_LIMIT_EXCEEDED').length).toBeGreaterThan(1);
  });
});

describe('WebSocket allowed origins', () => {
  const { server } = useTestServer({ config: { ws: wsConfig({ allowedOrigins: ['https://app.example'] }) } });

  it('refuses a browser Origin outside WS_ALLOWED_ORIGINS and accepts a listed one or none', async () => {
    const agent = await newAgent(new Api(server.url));
    const evil = connect(server.url, agent.jwt, { extraHeaders: { origin: 'https://evil.example' } });
    const refused = waitFor<Error>(evil, 'connect_error');
    expect((await refused).message).toBeTruthy();
    evil.disconnect();
    const good = await connectReady(server.url, agent.jwt, { extraHeaders: { origin: 'https://app.example' } });
    good.socket.disconnect();
    const plain = await connectReady(server.url, agent.jwt);
    plain.socket.disconnect();
  });
});

describe('WebSocket graceful shutdown', () => {
  it('refuses new sockets and events, lets the in-flight event finish and acknowledge, then closes the transport', async () => {
    const server = await startTestServer();
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    const agent = await newAgent(api);
    const room = await newRoom(api, admin, [agent]);
    const { socket } = await connectReady(server.url, agent.jwt);

    // Hold the domain call open so the event is provably in flight when the close begins.
    const messages = server.app.ctx.messages;
    const realSubmit = messages.submit.bind(messages); // message:send's entry (pipelined)
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    messages.submit = async (...args) => {
      started();
      await gate;
      return realSubmit(...args);
    };

    const order: string[] = [];
    const ack = emitWithAck(socket, 'message:send', { roomId: room.id, body: 'in flight' }).then((a: Payload) => {
      order.push('ack');
      return a;
    });
    const gone = disconnected(socket).then((reason) => {
      order.push('disconnect');
      return reason;
    });
    await inFlight;
    const closed = server.close();

    // While draining: new events are refused, new connections too.
    const late = await emitWithAck(socket, 'room:list');
    expect(late).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    const newcomer = connect(server.url, agent.jwt);
    const outcome = await Promise.race([
      waitFor(newcomer, 'connect_error').then(() => 'refused'),
      waitFor(newcomer, 'agent:hello-ack').then(() => 'accepted'),
    ]);
    expect(outcome).toBe('refused');
    newcomer.disconnect();

    release();
    expect(await ack).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    // The transport closes (not a Socket.IO disconnect), so a real client would reconnect by itself.
    expect(await gone).toBe('transport close');
    expect(order).toEqual(['ack', 'disconnect']);
    await closed;
  });
});
