import { EventEmitter } from 'node:events';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { boundOutgoing, bufferedBytesOf } from '../../src/realtime/outbound/slow-consumers.js';
import type { AgentSocket } from '../../src/realtime/protocol.js';

/**
 * The bound of outbound/slow-consumers.ts against a stand-in for engine.io's socket and its `ws`
 * WebSocket: the WebSocket's buffer grows by what a flush hands it (UTF-8 bytes plus a frame header)
 * and shrinks when the "network" takes bytes, as the real ones do.
 */
function fakeConnection() {
  const ws = {
    held: 0,
    reads: 0,
    terminated: false,
    get bufferedAmount(): number {
      this.reads++;
      return this.held;
    },
    terminate(): void {
      this.terminated = true;
    },
  };
  const conn = Object.assign(new EventEmitter(), {
    transport: { name: 'websocket', socket: ws },
    closed: false,
    writeBuffer: [] as string[],
    close(): void {
      this.closed = true;
    },
  });
  const socket = { conn, data: { principal: { agentId: 'a1' } } } as unknown as AgentSocket;
  const send = (data: string): void => {
    conn.emit('packetCreate', { type: 'message', data });
    if (!conn.closed) conn.writeBuffer.push(data);
  };
  /** engine.io hands its write buffer to the transport: into the WebSocket's buffers. */
  const flush = (): void => {
    conn.emit('flush', conn.writeBuffer);
    for (const data of conn.writeBuffer) ws.held += Buffer.byteLength(data) + 1 + 10;
    conn.writeBuffer = [];
  };
  return { ws, conn, socket, send, flush };
}

const logger = pino({ level: 'silent' });
const settle = (): Promise<void> => new Promise((resolve) => queueMicrotask(resolve));

/** `taken` is still sent; `tripping`, right after it, finds more than the limit held: dropped. */
async function expectDroppedAt(connection: ReturnType<typeof fakeConnection>, taken: string, tripping: string): Promise<void> {
  connection.send(taken);
  await settle();
  expect(connection.conn.closed).toBe(false);
  connection.send(tripping);
  await settle();
  expect(connection.conn.closed).toBe(true);
}

describe('boundOutgoing', () => {
  it('drops at the packet that finds more than the limit held, write buffer and WebSocket together', async () => {
    const connection = fakeConnection();
    const { ws, conn, socket, send, flush } = connection;
    boundOutgoing(socket, { maxBytes: 10_000, logger });
    // 4,000 three-byte characters flushed: 12,011 bytes in the WebSocket, 4,000 UTF-16 units.
    send('€'.repeat(4000));
    flush();
    expect(bufferedBytesOf(socket)).toBe(12_011);
    // The network takes most of it: 2,011 left; then 7,000 units queue in engine.io (not writable).
    ws.held = 2011;
    send('x'.repeat(7000));
    expect(conn.closed).toBe(false);
    expect(bufferedBytesOf(socket)).toBe(9011);
    // 9,011 <= 10,000: the next packet is still taken, the one after it is not.
    await expectDroppedAt(connection, 'y'.repeat(1000), 'z');
    expect(ws.terminated).toBe(true);
    expect(bufferedBytesOf(socket)).toBe(0);
  });

  it('counts what a flush hands the WebSocket even when it is not read: a large flush then a backlog trips it', async () => {
    const connection = fakeConnection();
    const { socket, send, flush } = connection;
    boundOutgoing(socket, { maxBytes: 10_000, logger });
    // 9,000 bytes wait in engine.io, then are flushed at once to a WebSocket that cannot write them.
    for (let i = 0; i < 9; i++) send('m'.repeat(1000));
    flush();
    // 9,099 bytes held by the WebSocket: one packet of 1,000 more is taken, the one after it is not.
    await expectDroppedAt(connection, 'n'.repeat(1000), 'o');
  });

  it('reads the WebSocket only when what may be held nears the limit, not for every packet', async () => {
    const { ws, conn, socket, send, flush } = fakeConnection();
    boundOutgoing(socket, { maxBytes: 1_000_000, logger });
    for (let i = 0; i < 10_000; i++) {
      send('{"roomId":"r","body":"hello"}');
      flush();
      ws.held = 0; // a reading client: everything written at once
    }
    expect(conn.closed).toBe(false);
    // 10,000 packets of 29 units: 1.03 MB counted high (3 x 29 + 16 each), so a read or two.
    expect(ws.reads).toBeGreaterThan(0);
    expect(ws.reads).toBeLessThan(10);
  });
});
