import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from 'socket.io';
import { io as ioClient } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisAdapter, GUARDED_ADAPTER_COMMANDS } from '../../src/cluster/redis-adapter.js';
import { safeParser } from '../../src/realtime/connection/safe-parser.js';
import { webSocketOf } from '../../src/realtime/outbound/slow-consumers.js';
import type { AgentSocket } from '../../src/realtime/protocol.js';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { REDIS_TEST_URL } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
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
  const { server, api } = useTestServer();
  let agent: TestAgent;
  let client: ClientSocket;

  beforeAll(async () => {
    agent = await newAgent(api);
    client = (await connectReady(server.url, agent.jwt, { transports: ['websocket'] })).socket;
  });
  afterAll(async () => {
    client?.disconnect();
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

  it('coalescing is installed on a WebSocket connection without an upgrade listener, and on a long-polling one once it upgrades', async () => {
    const direct = serverSocket();
    expect(Object.hasOwn(direct.conn.transport, 'send')).toBe(true); // corkedSend, over the prototype's
    // A WebSocket connection is never upgraded: no listener (one more name doubles the listener table).
    expect(direct.conn.listenerCount('upgrade')).toBe(0);

    const other = await newAgent(api);
    const { socket: polling } = await connectReady(server.url, other.jwt, { transports: ['polling', 'websocket'] });
    try {
      if (polling.io.engine.transport.name !== 'websocket') await new Promise((resolve) => polling.io.engine.once('upgrade', resolve));
      const upgraded = [...server.app.realtime.namespace.sockets.values()].find((s) => s.data.principal?.agentId === other.id)!;
      await waitUntil('the server side upgraded', () => (upgraded.conn.transport as unknown as EngineTransport).name === 'websocket');
      expect(Object.hasOwn(upgraded.conn.transport, 'send')).toBe(true);
      expect(upgraded.conn.listenerCount('upgrade')).toBe(0); // once: gone after the upgrade
    } finally {
      polling.disconnect();
    }
  });

  it('event-guard.ts pauses the ws WebSocket under the transport: pause() stops reading the connection, resume() reads on', async () => {
    const ws = webSocketOf(serverSocket());
    expect(ws).toBe((serverSocket().conn.transport as unknown as EngineTransport).socket);
    expect(typeof ws?.pause).toBe('function');
    expect(typeof ws?.resume).toBe('function');
    await roundTrip(client); // nothing else pending on the connection
    ws!.pause();
    let answered = false;
    const trip = roundTrip(client).then(() => {
      answered = true;
    });
    try {
      // A loopback round trip takes a few ms: an event read despite the pause would be answered by now.
      await waitToProveAbsence(300);
      expect(answered).toBe(false);
    } finally {
      ws!.resume();
    }
    await trip;
    expect(answered).toBe(true);
  });
});

describe('socket.io-parser and socket.io as realtime/connection/safe-parser.ts uses them', () => {
  const id = (n: string): string => `3/agents,${n}["x"]`; // an ACK packet of namespace /agents

  it("socket.io's Client subscribes to its parser's 'decoded' event with on(), and unsubscribes with removeListener()", async () => {
    const events: string[] = [];
    const decoders: InstanceType<typeof safeParser.Decoder>[] = [];
    class RecordingDecoder extends safeParser.Decoder {
      constructor() {
        super();
        decoders.push(this);
      }
      override on(event: string, listener: (...args: never[]) => void): this {
        events.push(event);
        return super.on(event, listener);
      }
    }
    const http = createServer();
    const io = new Server(http, { parser: { Encoder: safeParser.Encoder, Decoder: RecordingDecoder } });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as AddressInfo;
    const socket = ioClient(`http://127.0.0.1:${port}`, { transports: ['websocket'] });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('connect_error', reject);
      });
      expect(events).toContain('decoded');
      expect(decoders.some((d) => d.hasListeners('decoded'))).toBe(true);
    } finally {
      socket.disconnect();
      await io.close();
    }
    // removeListener() found the wrapped listener (or the decoder would keep the closed Client).
    await waitUntil("the Client's listener removed", () => decoders.every((d) => !d.hasListeners('decoded')), 5000);
  });

  it("the Decoder's emitter finds a wrapped listener by the `fn` convention, and an unsafe id throws out of add()", () => {
    const decoder = new safeParser.Decoder();
    const got: unknown[] = [];
    const listener = (packet: unknown): void => void got.push(packet);
    decoder.on('decoded', listener);
    decoder.add(id(String(Number.MAX_SAFE_INTEGER)));
    expect(got).toEqual([expect.objectContaining({ id: Number.MAX_SAFE_INTEGER, nsp: '/agents' })]);
    expect(() => decoder.add(id('1234567890123456789012345'))).toThrow('invalid acknowledgement id');
    decoder.removeListener('decoded', listener);
    expect(decoder.hasListeners('decoded')).toBe(false);
  });
});

const redisReady = await servicesAvailable('redis adapter patch', ['redis']);

describe.skipIf(!redisReady)('the Redis adapter patch in cluster/redis-adapter.ts', () => {
  it.each(['sharded', 'classic'] as const)('the %s adapter sends its commands only through the methods whose promises the patch handles', async (mode) => {
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

    const key = `ams-test:${randomBytes(5).toString('hex')}`;
    const handle = await createRedisAdapter(base, key, pino({ level: 'silent' }), { mode });
    const io = new Server({ adapter: handle.adapter });
    try {
      const nsp = io.of('/agents');
      // The adapter subscribes (seen from `base`, whose own commands are not recorded).
      // Classic mode subscribes to a pattern, sharded mode to shard channels.
      const listing = mode === 'sharded' ? 'SHARDCHANNELS' : 'CHANNELS';
      await waitUntil('the adapter subscribed', async () => ((await base.call('PUBSUB', listing, `${key}*`)) as string[]).length > 0);
      nsp.to('room:x').emit('message:new', {}); // broadcast
      nsp.in('agent:x').socketsJoin('room:y'); // room operations
      nsp.in('agent:x').socketsLeave('room:y');
      nsp.in('token:x').disconnectSockets(true);
      // The commands those calls issue are written at once: 100 ms is ample for any to be recorded.
      await waitToProveAbsence(100);
      expect(unguarded).toEqual([]);
    } finally {
      await Promise.allSettled([io.of('/'), io.of('/agents')].map(async (n) => n.adapter.close()));
      await handle.close();
      base.disconnect();
    }
  });
});
