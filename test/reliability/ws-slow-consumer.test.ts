import { beforeAll, describe, expect, it } from 'vitest';
import { bufferedBytesOf } from '../../src/realtime/outbound/slow-consumers.js';
import type { AgentSocket } from '../../src/realtime/protocol.js';
import { testConfig } from '../helpers/config.js';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, emitWithAck, record, roundTrip, type Payload } from '../helpers/ws.js';
import { rawAgentSocket } from '../helpers/raw-ws.js';
import { waitUntil } from '../helpers/wait.js';

/**
 * A client that never reads is disconnected before the server holds unbounded memory for
 * it, while a normal client keeps receiving everything.
 */

const LIMIT = 512 * 1024; // WS_MAX_BUFFERED_BYTES for these tests (8 MiB by default)
const BODY = 'x'.repeat(16_384); // the largest message body: one message:new is ~16.5 KiB
const PACKET_MAX = BODY.length + 512;
// Enough to fill the loopback TCP buffers (a few MiB: tcp_wmem tops out at 4 MiB) and then the limit.
const MAX_MESSAGES = 1200;

describe('slow consumers (WS_MAX_BUFFERED_BYTES)', () => {
  const { server, api } = useTestServer({ config: { ws: { ...testConfig().ws, maxBufferedBytes: LIMIT } } });
  let admin: TestAgent;
  let stalled: TestAgent;
  let reader: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    admin = await newAdmin(api);
    stalled = await newAgent(api);
    reader = await newAgent(api);
    room = await newRoom(api, admin, [stalled, reader]);
  });

  const serverSocketOf = (agentId: string): AgentSocket | undefined =>
    [...server.app.realtime.namespace.sockets.values()].find((s) => s.data.principal?.agentId === agentId);

  /**
   * Sends messages to the room over REST (4 at a time) until `stop()` or MAX_MESSAGES, sampling the
   * stalled socket's outgoing buffer after each. Returns the bodies sent, in order, and the peak.
   */
  async function flood(target: AgentSocket, stop: () => boolean): Promise<{ sent: string[]; peak: number }> {
    const sent: string[] = [];
    let peak = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (!stop() && next < MAX_MESSAGES) {
        const body = `${next++} ${BODY}`.slice(0, 16_384);
        const res = await api.post(`/api/v1/rooms/${room.id}/messages`, { body }, { jwt: admin.jwt });
        expect(res.status).toBe(201);
        sent.push(body);
        peak = Math.max(peak, bufferedBytesOf(target));
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    return { sent, peak };
  }

  it('drops a WebSocket client that stopped reading once more than the limit waits for it; a reading client gets every message', async () => {
    const raw = await rawAgentSocket(server.url, stalled.jwt);
    const target = serverSocketOf(stalled.id)!;
    expect(target).toBeDefined();
    // The server's end of the connection (`ws`): CLOSED once its TCP socket is destroyed.
    const serverWs = (target.conn.transport as unknown as { socket: { readyState: number } }).socket;
    let dropReason: string | undefined;
    target.on('disconnect', (reason) => (dropReason = reason));

    const { socket: normal } = await connectReady(server.url, reader.jwt);
    const received = record(normal, 'message:new');

    raw.stopReading();
    const { sent, peak } = await flood(target, () => dropReason !== undefined);

    expect(dropReason, `not dropped after ${sent.length} messages (peak ${peak} bytes held)`).toBeDefined();
    // It took more than the limit to drop it (the kernel buffers took the first MiBs), and the server
    // never held more than the limit plus the one packet that tipped it over.
    expect(sent.length * BODY.length).toBeGreaterThan(LIMIT);
    expect(peak).toBeLessThanOrEqual(LIMIT + PACKET_MAX);
    // Everything held for it is released: the TCP socket is destroyed, not waiting for a close handshake.
    await waitUntil('server side of the WebSocket closed', () => serverWs.readyState === 3, 2000);
    if (process.env.AMS_TEST_REPORT) console.warn(`slow consumer (websocket): dropped after ${sent.length} messages of ${BODY.length} chars; peak held ${peak} (limit ${LIMIT}); reason ${dropReason}`);
    expect(server.app.realtime.namespace.sockets.has(target.id)).toBe(false);
    expect(await server.app.ctx.presence.connectionCount(stalled.id)).toBe(0);

    // The reading client got every message exactly once (four concurrent senders: no order among them).
    await waitUntil('all messages received', () => received.length >= sent.length, 10_000);
    await roundTrip(normal);
    expect(received).toHaveLength(sent.length);
    expect(new Set(received.map((m: Payload) => m.body))).toEqual(new Set(sent));
    const history = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: admin.jwt });
    const receivedIds = new Set(received.map((m: Payload) => m.id));
    expect(history.body.messages.every((m: Payload) => receivedIds.has(m.id))).toBe(true);
    expect(normal.connected).toBe(true);

    // The dropped agent can come back (a new connection starts with an empty buffer).
    raw.destroy();
    const back = await connectReady(server.url, stalled.jwt);
    expect(await emitWithAck(back.socket, 'message:send', { roomId: room.id, body: 'back' })).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    back.socket.disconnect();
    normal.disconnect();
  });

  it('drops a long-polling client that stopped polling, the same way', async () => {
    const base = `${server.url}/socket.io/?EIO=4&transport=polling`;
    const open = await (await fetch(`${base}&token=${encodeURIComponent(stalled.jwt)}`)).text();
    const sid = (JSON.parse(open.slice(1)) as { sid: string }).sid;
    expect(await (await fetch(`${base}&sid=${sid}`, { method: 'POST', body: '40/agents,' })).text()).toBe('ok');
    await waitUntil('polling socket connected', () => serverSocketOf(stalled.id) !== undefined);
    const target = serverSocketOf(stalled.id)!;
    let dropReason: string | undefined;
    target.on('disconnect', (reason) => (dropReason = reason));
    // From here on it never polls: whatever is sent to it waits in the server's write buffer.

    const { sent, peak } = await flood(target, () => dropReason !== undefined);
    expect(dropReason, `not dropped after ${sent.length} messages`).toBeDefined();
    if (process.env.AMS_TEST_REPORT) console.warn(`slow consumer (polling): dropped after ${sent.length} messages; peak held ${peak} (limit ${LIMIT}); reason ${dropReason}`);
    expect(peak).toBeLessThanOrEqual(LIMIT + PACKET_MAX);
    expect(server.app.realtime.namespace.sockets.has(target.id)).toBe(false);
  });

  it('does not drop a client for one packet larger than the limit (a history page of large messages)', async () => {
    const stored = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100`, { jwt: admin.jwt });
    for (let i = stored.body.messages.length; i < 100; i++) await api.post(`/api/v1/rooms/${room.id}/messages`, { body: BODY }, { jwt: admin.jwt });
    const { socket } = await connectReady(server.url, reader.jwt);
    // 100 stored messages of ~16 KiB: one acknowledgement of ~1.6 MiB, three times the limit.
    const page = await emitWithAck(socket, 'message:history', { roomId: room.id, limit: 100 });
    expect(page.messages).toHaveLength(100);
    expect(JSON.stringify(page).length).toBeGreaterThan(3 * LIMIT);
    expect(await emitWithAck(socket, 'room:list')).toEqual({ rooms: [expect.objectContaining({ id: room.id })] });
    expect(socket.connected).toBe(true);
    socket.disconnect();
  });
});
