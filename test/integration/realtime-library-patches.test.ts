import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { Server } from 'socket.io';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, GUARDED_ADAPTER_COMMANDS } from '../../src/cluster/redis-adapter.js';
import type { AgentSocket } from '../../src/realtime/protocol.js';
import { Api, newAgent, type TestAgent } from '../helpers/api.js';
import { REDIS_TEST_URL, startTestServer, type TestServer } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { connectReady, roundTrip, type ClientSocket } from '../helpers/ws.js';

/**
 * The realtime layer leans on private parts of its libraries (docs/architecture.md): engine.io's WebSocket
 * transport (`send`, `socket`: the `ws` WebSocket with `bufferedAmount` and `_socket`, the TCP socket)
 * for slow consumers and write coalescing, and the Redis adapter's habit of dropping the promises of a
 * few client commands. package.json pins socket.io and @socket.io/redis-adapter to patch releases;
 * these tests fail when an upgrade moves what the patches rely on.
 */

interface TcpSocket {
  cork(): void;
  uncork(): void;
  _writev?: (...args: unknown[]) => unknown;
  _write: (...args: unknown[]) => unknown;
}
interface EngineTransport {
  name?: unknown;
  writable?: unknown;
  send?: unknown;
  socket?: { bufferedAmount?: unknown; _socket?: TcpSocket };
}

describe('engine.io internals used by outbound/slow-consumers.ts and outbound/write-coalescing.ts', () => {
  let server: TestServer;
  let agent: TestAgent;
  let client: ClientSocket;

  beforeAll(async () => {
    server = await startTestServer();
    agent = await newAgent(new Api(server.url));
    client = (await connectReady(server.url, agent.jwt, { transports: ['websocket'] })).socket;
  });
  afterAll(async () => {
    client?.disconnect();
    await server.close();
  });

  const serverSocket = (): AgentSocket => [...server.app.realtime.namespace.sockets.values()].find((s) => s.data.principal?.agentId === agent.id)!;

  it('the WebSocket transport has send(packets), a ws WebSocket with a numeric bufferedAmount, and its net.Socket with cork/uncork', () => {
    const transport = serverSocket().conn.transport as unknown as EngineTransport;
    expect(transport.name).toBe('websocket');
    expect(typeof transport.send).toBe('function');
    expect(typeof transport.writable).toBe('boolean');
    expect(typeof transport.socket?.bufferedAmount).toBe('number');
    const tcp = transport.socket?._socket;
    expect(typeof tcp?.cork).toBe('function');
    expect(typeof tcp?.uncork).toBe('function');
    expect(typeof tcp?._writev).toBe('function');
  });

  it('corking coalesces: several packets sent together reach the TCP socket in one write', async () => {
    const socket = serverSocket();
    const tcp = (socket.conn.transport as unknown as EngineTransport).socket!._socket!;
    await roundTrip(client); // nothing else pending on the connection
    let writes = 0;
    const writev = tcp._writev!;
    const write = tcp._write;
    tcp._writev = function (this: unknown, ...args: unknown[]) {
      writes++;
      return writev.apply(this, args);
    };
    tcp._write = function (this: unknown, ...args: unknown[]) {
      writes++;
      return write.apply(this, args);
    };
    try {
      const got: unknown[] = [];
      client.on('presence:update', (p: unknown) => got.push(p));
      // One call of the transport with three packets, as engine.io's flush makes it (engine.io adds
      // the message type 4 to each Socket.IO packet).
      const packet = (i: number) => ({ type: 'message', data: `2/agents,["presence:update",{"agentId":"x${i}","status":"online"}]`, options: { compress: false } });
      (socket.conn.transport as unknown as { send(packets: unknown[]): void }).send([packet(1), packet(2), packet(3)]);
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(writes).toBe(1);
      await roundTrip(client);
      expect(got).toHaveLength(3);
    } finally {
      tcp._writev = writev;
      tcp._write = write;
      client.off('presence:update');
    }
  });
});

const redisReady = await servicesAvailable('redis adapter patch', ['redis']);

describe.skipIf(!redisReady)('the Redis adapter patch in cluster/redis-adapter.ts', () => {
  it('the adapter sends its commands only through the methods whose promises the patch handles', async () => {
    const base = new Redis(REDIS_TEST_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    await new Promise((resolve) => base.once('ready', resolve));
    const unguarded: string[] = [];
    const duplicate = base.duplicate.bind(base);
    const guardedNames = new Set<string>([...GUARDED_ADAPTER_COMMANDS.pub, ...GUARDED_ADAPTER_COMMANDS.sub]);
    // Each duplicated client records the commands it sends outside a guarded method (connection set-up aside).
    base.duplicate = (options) => {
      const client = duplicate(options);
      const target = client as unknown as Record<string, (...args: unknown[]) => unknown>;
      let inGuarded = 0;
      // A command queued while connecting is sent again later from the offline queue: judge its first send.
      const fromGuarded = new WeakSet<object>();
      for (const name of guardedNames) {
        const original = target[name]!.bind(client);
        target[name] = (...args: unknown[]) => {
          inGuarded++;
          try {
            return original(...args);
          } finally {
            inGuarded--;
          }
        };
      }
      const send = client.sendCommand.bind(client);
      client.sendCommand = (command, stream) => {
        const name = (command as { name: string }).name.toLowerCase();
        if (inGuarded > 0) fromGuarded.add(command);
        else if (!fromGuarded.has(command) && !['info', 'ping', 'client', 'select', 'quit'].includes(name)) unguarded.push(name);
        return send(command, stream);
      };
      return client;
    };

    const handle = await createRedisAdapter(base, `ams-test:${randomBytes(5).toString('hex')}`, pino({ level: 'silent' }));
    const io = new Server({ adapter: handle.adapter });
    try {
      const nsp = io.of('/agents');
      await new Promise((resolve) => setTimeout(resolve, 100)); // the adapter subscribes
      nsp.to('room:x').emit('message:new', {}); // broadcast
      nsp.in('agent:x').socketsJoin('room:y'); // room operations
      nsp.in('agent:x').socketsLeave('room:y');
      nsp.in('token:x').disconnectSockets(true);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(unguarded).toEqual([]);
    } finally {
      await Promise.allSettled([io.of('/'), io.of('/agents')].map(async (n) => n.adapter.close()));
      await handle.close();
      base.disconnect();
    }
  });
});
