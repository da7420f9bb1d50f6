import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/build.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { createTestDatabase, startServerProcess, startTestServer, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from '../helpers/server.js';
import { connectReady, disconnected, emitWithAck, record, type Payload } from '../helpers/ws.js';
import { eventsInFlightOf } from '../../src/realtime/connection/event-guard.js';
import { waitUntil } from '../helpers/wait.js';
import { servicesAvailable } from '../helpers/services.js';

/**
 * Graceful shutdown with live sockets. Events in flight when the close begins (a SIGTERM)
 * finish: they are stored, broadcast and acknowledged before the sockets close; later events are
 * refused (UNAVAILABLE), never half-done.
 */

describe('graceful close with WebSocket events in flight (in process)', () => {
  it('the running event and the one queued behind it are stored, broadcast and acknowledged before the transport closes', async () => {
    const server = await startTestServer();
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    const alice = await newAgent(api);
    const bob = await newAgent(api);
    const room = await newRoom(api, admin, [alice, bob]);
    const a = await connectReady(server.url, alice.jwt);
    const b = await connectReady(server.url, bob.jwt);
    const bobSaw = record(b.socket, 'message:new');
    const order: string[] = [];
    b.socket.on('disconnect', () => order.push('bob disconnected'));

    // Hold the first send inside the domain call, so it is provably running when the close begins.
    const messages = server.app.ctx.messages;
    const realSubmit = messages.submit.bind(messages); // message:send's entry (pipelined)
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    messages.submit = async (...args) => {
      if (calls++ === 0) {
        started();
        await gate;
      }
      return realSubmit(...args);
    };
    // Admitted events are in the socket's queue until answered: both, once the second is admitted.
    const serverSocket = [...server.app.realtime.namespace.sockets.values()].find((s) => s.data.principal.agentId === alice.id)!;

    const first = emitWithAck(a.socket, 'message:send', { roomId: room.id, body: 'in flight', clientMsgId: 'shutdown-1' });
    await running;
    const second = emitWithAck(a.socket, 'message:send', { roomId: room.id, body: 'queued behind it', clientMsgId: 'shutdown-2' });
    await waitUntil('both events admitted', () => eventsInFlightOf(serverSocket) === 2);
    for (const [p, name] of [[first, 'ack 1'], [second, 'ack 2']] as const) void p.then(() => order.push(name));

    const closed = server.app.close();
    // Draining: a new event is refused, not half-done.
    expect(await emitWithAck(a.socket, 'message:send', { roomId: room.id, body: 'too late', clientMsgId: 'shutdown-3' }))
      .toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    release();

    const [ack1, ack2] = await Promise.all([first, second]);
    expect(ack1).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    expect(ack2).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    expect(await disconnected(a.socket)).toBe('transport close');
    await closed;
    expect(order.slice(0, 2)).toEqual(['ack 1', 'ack 2']);
    // Broadcast before the sockets closed.
    expect(bobSaw.map((m: Payload) => m.id)).toEqual([ack1.messageId, ack2.messageId]);

    // Stored exactly once, and a retry with the same clientMsgId after the restart is the original.
    const restarted = await startTestServer({ db: server.db });
    try {
      const api2 = new Api(restarted.url);
      const history = await api2.get(`/api/v1/rooms/${room.id}/messages`, { jwt: alice.jwt });
      expect(history.body.messages.map((m: Payload) => m.body)).toEqual(['queued behind it', 'in flight']);
      const retry = await api2.post(`/api/v1/rooms/${room.id}/messages`, { body: 'in flight', clientMsgId: 'shutdown-1' }, { jwt: alice.jwt });
      expect(retry.status).toBe(200);
      expect(retry.body.id).toBe(ack1.messageId);
    } finally {
      await restarted.close();
    }
  });
});

const pgAvailable = await servicesAvailable('ws-shutdown SIGTERM test', ['postgres']);

describe.skipIf(!pgAvailable)('SIGTERM with a message:send in flight (node dist/main.js on PostgreSQL)', () => {
  let db: TestDatabase | undefined;
  let running: StartedServer | undefined;
  let locker: pg.Client | undefined;
  beforeAll(ensureBuilt, 180_000);
  afterEach(async () => {
    await locker?.end().catch(() => undefined);
    await running?.kill();
    await db?.drop();
    locker = running = db = undefined;
  });

  it('the send waiting on the database when the signal arrives is committed and acknowledged; the process exits 0', async () => {
    // A lock held by the test keeps the server's INSERT waiting in PostgreSQL: provably in flight.
    db = await createTestDatabase('postgres');
    running = await startServerProcess({ DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET });
    const { url } = running;
    const api = new Api(url);
    const admin: TestAgent = await newAdmin(api);
    const agent = await newAgent(api);
    const room = await newRoom(api, admin, [agent]);
    const { socket } = await connectReady(url, agent.jwt);
    const clientMsgId = `sigterm-${randomBytes(4).toString('hex')}`;

    locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table messages in exclusive mode');
    const ack = emitWithAck(socket, 'message:send', { roomId: room.id, body: 'in flight at SIGTERM', clientMsgId }, 15_000);
    const dbName = new URL(db.url).pathname.slice(1);
    await waitUntil('the INSERT waiting on the lock', async () => {
      const waiting = await locker!.query("select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'", [dbName]);
      return (waiting.rows[0] as { n: number }).n > 0;
    });

    running.child.kill('SIGTERM');
    await running.waitForLog((l) => l.msg === 'shutting down');
    // Draining: new events are refused while the in-flight one waits.
    expect(await emitWithAck(socket, 'room:list')).toEqual({ error: { code: 'UNAVAILABLE', message: expect.any(String) } });
    await locker.query('commit');

    const acked = await ack;
    expect(acked).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    expect(await disconnected(socket)).toBe('transport close');
    const exit = await running.exit;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.stderr).toBe('');

    const stored = await locker.query('select id, body from messages where client_msg_id = $1', [clientMsgId]);
    expect(stored.rows).toEqual([{ id: acked.messageId, body: 'in flight at SIGTERM' }]);
  });
});
