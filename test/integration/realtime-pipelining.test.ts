import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventsInFlightOf } from '../../src/realtime/connection/event-guard.js';
import type { AgentSocket } from '../../src/realtime/protocol.js';
import { testConfig } from '../helpers/config.js';
import { newAdminAgentRoom, type TestAgent } from '../helpers/api.js';
import { TEST_DIALECT, type TestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, record, type ClientSocket, type Payload } from '../helpers/ws.js';

/**
 * One connection's sends are pipelined (the next is validated and queued while the
 * previous commits), kept in order end to end, and bounded in flight per connection.
 */

const IN_FLIGHT = 16;
const unthrottled = { ...testConfig().ws, eventsPerSecond: 1_000_000, abuseEventsPerSecond: 1_000_000, abuseSeconds: 3600 };

interface Sent {
  acks: Payload[];
  /** Resolves once every send is answered. */
  answered: Promise<void>;
}

/** Emits `count` sends without waiting for any acknowledgement; records the acks in arrival order. */
function sendWithoutWaiting(socket: ClientSocket, roomId: string, bodies: readonly string[]): Sent {
  const acks: Payload[] = [];
  const answered = new Promise<void>((resolve) => {
    bodies.forEach((body, i) => {
      socket.emit('message:send', { roomId, body }, (ack: Payload) => {
        acks.push({ ...ack, index: i });
        if (acks.length === bodies.length) resolve();
      });
    });
  });
  return { acks, answered };
}

/** The room's messages as stored, in seq order. */
async function storedMessages(server: TestServer, roomId: string): Promise<{ body: string; seq: number }[]> {
  const rows = await server.app.ctx.database.db.selectFrom('messages').select(['body', 'seq']).where('room_id', '=', roomId).orderBy('seq').execute();
  return rows.map((row) => ({ body: row.body, seq: Number(row.seq) }));
}

function expectInOrder(server: TestServer, sent: Sent, delivered: Payload[], bodies: readonly string[]): void {
  // Acknowledged in the order sent, each with the next seq.
  expect(sent.acks.map((a) => a.index)).toEqual(bodies.map((_, i) => i));
  expect(sent.acks.every((a) => typeof a.messageId === 'string')).toBe(true);
  expect(sent.acks.map((a) => a.seq)).toEqual(bodies.map((_, i) => i + 1));
  // Delivered to another member in the same order, with the same ids.
  expect(delivered.map((m) => m.body)).toEqual(bodies);
  expect(delivered.map((m) => m.id)).toEqual(sent.acks.map((a) => a.messageId));
}

describe('pipelined message:send on one connection', () => {
  const suite = useTestServer({ config: { ws: { ...unthrottled, maxEventsInFlight: IN_FLIGHT } } });
  let admin: TestAgent;
  let agent: TestAgent;
  let roomId: string;
  const sockets: ClientSocket[] = [];

  const open = async (who: TestAgent): Promise<ClientSocket> => {
    const { socket } = await connectReady(suite.server.url, who.jwt);
    sockets.push(socket);
    return socket;
  };

  beforeAll(async () => {
    ({ admin, agent, roomId } = await newAdminAgentRoom(suite.api));
  });
  afterEach(() => {
    for (const socket of sockets.splice(0)) socket.disconnect();
  });

  it('5,000 sends without waiting: stored once in order, acknowledged in order, delivered in order', async () => {
    const room = (await suite.api.post('/rooms', { slug: `pipe-${Date.now()}`, name: 'pipelined', members: [agent.id] }, { headers: { 'x-agent-id': admin.id } })).body;
    const sender = await open(admin);
    const reader = await open(agent);
    const delivered = record(reader, 'message:new');
    const bodies = Array.from({ length: 5000 }, (_, i) => `pipelined ${i}`);

    const sent = sendWithoutWaiting(sender, room.id, bodies);
    await sent.answered;
    await waitUntil('every message delivered to the other member', () => delivered.length >= bodies.length);

    expectInOrder(suite.server, sent, delivered, bodies);
    expect(await storedMessages(suite.server, room.id)).toEqual(bodies.map((body, i) => ({ body, seq: i + 1 })));
  }, 60_000);

  it('an event that is not a send waits for the sends before it: a room:leave after a send, a history read after sends', async () => {
    const sender = await open(admin);
    const own = record(sender, 'message:new');
    const before = (await storedMessages(suite.server, roomId)).length;
    const sent = sendWithoutWaiting(sender, roomId, ['before leave 1', 'before leave 2']);
    // Not awaited either: it must see both sends committed, and the sender still gets their message:new.
    const history = emitWithAck(sender, 'message:history', { roomId, limit: 2 });
    const left = emitWithAck(sender, 'room:leave', { roomId });
    await Promise.all([sent.answered, left]);
    expect((await history).messages.map((m: Payload) => m.body)).toEqual(['before leave 2', 'before leave 1']);
    await waitUntil('the sender received its own two messages', () => own.length >= 2);
    expect(own.map((m) => m.body)).toEqual(['before leave 1', 'before leave 2']);
    // After the leave the socket is out of the room's channel: its next send is stored, not echoed.
    await emitWithAck(sender, 'message:send', { roomId, body: 'after leave' });
    expect((await storedMessages(suite.server, roomId)).length).toBe(before + 3);
    expect(own.map((m) => m.body)).not.toContain('after leave');
  });

  it('a connection whose sends cannot commit is not read beyond its in-flight bound, and catches up in order once they can', async () => {
    const sender = await open(admin);
    const reader = await open(agent);
    const delivered = record(reader, 'message:new');
    const serverSocket = [...suite.server.app.realtime.namespace.sockets.values()].find((s: AgentSocket) => s.data.principal.agentId === admin.id && s.connected);
    expect(serverSocket).toBeDefined();
    const start = (await storedMessages(suite.server, roomId)).length;

    // About 1 KiB per frame: a paused WebSocket can still deliver one read of 64 KiB, about 64 of them.
    const padding = 'x'.repeat(1000);
    const bodies = Array.from({ length: 2000 }, (_, i) => `stalled ${i} ${padding}`);
    const release = await holdWriteLock(suite.server, roomId);
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, eventsInFlightOf(serverSocket!));
    }, 2);
    let sent: Sent;
    try {
      sent = sendWithoutWaiting(sender, roomId, bodies);
      await waitUntil('the connection reached its in-flight bound', () => eventsInFlightOf(serverSocket!) >= IN_FLIGHT - 1);
      // Growth past the bound, if the connection read on, would show within a few reads.
      await waitToProveAbsence(300);
      // Bounded while nothing commits: the bound plus one read's worth of frames, not 2,000 sends.
      expect(eventsInFlightOf(serverSocket!)).toBeLessThanOrEqual(IN_FLIGHT + 64 + 2);
      expect(sent.acks.length).toBe(0);
    } finally {
      await release();
    }
    await sent.answered;
    clearInterval(sampler);
    expect(peak).toBeLessThanOrEqual(IN_FLIGHT + 64 + 2);
    expect(sent.acks.every((a) => typeof a.messageId === 'string')).toBe(true);
    expect(sent.acks.map((a) => a.index)).toEqual(bodies.map((_, i) => i));
    const seqs = sent.acks.map((a) => a.seq as number);
    expect(seqs).toEqual(bodies.map((_, i) => seqs[0]! + i));
    await waitUntil('every message delivered to the other member', () => delivered.length >= bodies.length);
    expect(delivered.map((m) => m.body)).toEqual(bodies);
    expect((await storedMessages(suite.server, roomId)).slice(start).map((m) => m.body)).toEqual(bodies);
  }, 60_000);
});

/**
 * Holds the database's write lock from another connection, as another process would (SQLite: the
 * file's write lock; PostgreSQL: the room row that numbering a message updates). Release within
 * SQLITE_LOCK_TIMEOUT_MS (2 s), after which a waiting write would give up.
 */
async function holdWriteLock(server: TestServer, roomId: string): Promise<() => Promise<void>> {
  if (TEST_DIALECT === 'sqlite') {
    const other = new SQLite(server.db.url.slice('sqlite:'.length));
    other.exec('begin immediate');
    return () => {
      other.exec('rollback');
      other.close();
      return Promise.resolve();
    };
  }
  const client = new pg.Client({ connectionString: server.db.url });
  await client.connect();
  await client.query('begin');
  await client.query('select id from rooms where id = $1 for update', [roomId]);
  return async () => {
    await client.query('rollback');
    await client.end();
  };
}
