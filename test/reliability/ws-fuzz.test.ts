import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { testConfig } from '../helpers/config.js';
import { ERROR_CATALOG } from '../../src/errors.js';
import { CLIENT_EVENTS } from '../../src/realtime/protocol.js';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { connectReady, emitWithAck, record, roundTrip, waitFor, type Payload } from '../helpers/ws.js';
import { RawWebSocket, rawAgentSocket } from '../helpers/raw-ws.js';

/**
 * Property-based fuzzing of every WebSocket event with arbitrary payloads (non-objects,
 * arrays, full-Unicode strings, NUL, lone surrogates, __proto__/constructor keys, huge numbers, deep
 * nesting, binary attachments; with and without acknowledgements; extra arguments; unknown events),
 * and of the raw Socket.IO frames underneath. The server never crashes or logs an internal error,
 * every acknowledgement is the event's success shape or {error: {code, message}} with a known code,
 * every `error` event is {code, message, requestId?}, nothing is polluted, and afterwards a normal
 * client works.
 */

const SEED = Number(process.env.AMS_FUZZ_SEED ?? Date.now() % 1_000_000);
const RUNS = Number(process.env.AMS_FUZZ_RUNS ?? 1000);

// The WebSocket codes of docs/protocol.md, and the rest of the catalog a client may meet (CONFLICT: clientMsgId
// reused with another body; NOT_FOUND). Never INTERNAL (a bug) nor UNAVAILABLE (the database is up).
const SPEC_CODES = ['AUTH_FAILED', 'VALIDATION_ERROR', 'ROOM_NOT_FOUND', 'FORBIDDEN', 'RATE_LIMIT_EXCEEDED'];
const ALLOWED_CODES = new Set([...SPEC_CODES, ...Object.values(ERROR_CATALOG).map((e) => e.ws)].filter((c) => c !== 'INTERNAL' && c !== 'UNAVAILABLE'));

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const keysAre = (v: Record<string, unknown>, keys: string[]): boolean => Object.keys(v).sort().join() === [...keys].sort().join();

function isErrorAck(ack: unknown): boolean {
  if (!isObject(ack) || !keysAre(ack, ['error']) || !isObject(ack.error)) return false;
  const { code, message } = ack.error;
  return keysAre(ack.error, ['code', 'message']) && typeof code === 'string' && ALLOWED_CODES.has(code) && typeof message === 'string' && message !== '';
}

function isErrorEvent(payload: unknown): boolean {
  if (!isObject(payload)) return false;
  const { code, message, requestId } = payload;
  const keysOk = keysAre(payload, requestId === undefined ? ['code', 'message'] : ['code', 'message', 'requestId']);
  return keysOk && typeof code === 'string' && ALLOWED_CODES.has(code) && typeof message === 'string' && (requestId === undefined || typeof requestId === 'string');
}

const isWsMessage = (m: unknown): boolean =>
  isObject(m) && ['id', 'roomId', 'authorAgentId', 'body', 'createdAt'].every((k) => typeof m[k] === 'string') && Number.isInteger(m.seq);

/** The success acknowledgement of each event (docs/protocol.md, Client to server). */
const SUCCESS: Record<string, (ack: Record<string, unknown>) => boolean> = {
  'room:join': (a) => keysAre(a, ['ok']) && a.ok === true,
  'room:leave': (a) => keysAre(a, ['ok']) && a.ok === true,
  'room:list': (a) => keysAre(a, ['rooms']) && Array.isArray(a.rooms) && a.rooms.every((r) => isObject(r) && keysAre(r, ['id', 'slug', 'name', 'kind', 'lastSeq', 'readSeq', 'unreadCount', 'attentionCount'])),
  'message:send': (a) => keysAre(a, ['messageId', 'seq']) && typeof a.messageId === 'string' && UUID_RE.test(a.messageId) && Number.isInteger(a.seq),
  'message:history': (a) => keysAre(a, ['messages', 'hasMore', 'cursor', 'oldestSeq']) && Array.isArray(a.messages) && a.messages.every(isWsMessage)
    && typeof a.hasMore === 'boolean' && (a.cursor === null || (typeof a.cursor === 'string' && UUID_RE.test(a.cursor))),
  'room:sync': (a) => keysAre(a, ['messages', 'lastSeq', 'hasMore', 'oldestSeq']) && Array.isArray(a.messages) && a.messages.every(isWsMessage)
    && Number.isInteger(a.lastSeq) && typeof a.hasMore === 'boolean',
  'room:read': (a) => keysAre(a, ['roomId', 'readSeq', 'unreadCount']) && Number.isInteger(a.readSeq) && Number.isInteger(a.unreadCount),
  'dm:open': (a) => keysAre(a, ['room']) && isObject(a.room) && a.room.kind === 'direct',
  'activity:set': (a) => keysAre(a, ['ok']) && a.ok === true,
  'task:move': (a) => keysAre(a, ['task']) && isObject(a.task) && typeof a.task.id === 'string' && typeof a.task.state === 'string',
  'message:append': (a) => keysAre(a, ['ok', 'length']) && a.ok === true && Number.isInteger(a.length),
  'message:end': (a) => keysAre(a, ['message']) && isWsMessage(a.message),
  'message:ack': (a) => keysAre(a, ['ackedAt']) && typeof a.ackedAt === 'string',
  'message:thread': (a) => keysAre(a, ['root', 'replies', 'hasMore']) && isWsMessage(a.root) && Array.isArray(a.replies) && a.replies.every(isWsMessage),
};

// ---- arbitraries ------------------------------------------------------------------------------

/** Any code point, plus lone surrogates and NUL, which `'binary'` alone does not produce. */
const hostileChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\uFEFF', '\u202E', '\n', '"', '\\') },
);
const hostileString = fc.string({ unit: hostileChar, maxLength: 40 });
// Not `_placeholder`: in a packet with binary attachments Socket.IO reserves objects with that key
// for attachment references, and the server's parser closes a connection whose references are
// wrong (a protocol error, no crash). socket.io-client does not escape the key; the raw-frame
// property below sends such packets on purpose.
const hostileKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty', 'toJSON', '__defineGetter__', 'then',
    'roomId', 'body', 'requestId', 'before', 'cursor', 'limit', 'mentions', 'replyTo', 'clientMsgId', 'num'),
  hostileString.filter((k) => k !== '_placeholder'),
);
const hugeNumber = fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -(2 ** 63), 2 ** 64, 1e21, 5e-324, -0, 0.5, 101, -1, 0, 1, 100, Number.NaN, Number.POSITIVE_INFINITY);
const binary = fc.oneof(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.uint8Array({ maxLength: 16 }), fc.float64Array({ maxLength: 4 }));

/**
 * Nested arrays or objects `depth` levels deep (JSON.stringify on the client stays well within its
 * stack). They describe themselves briefly to fast-check, whose reporter would recurse as deep.
 */
const deep = fc.tuple(fc.integer({ min: 50, max: 2000 }), fc.boolean()).map(([depth, asArray]) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = asArray ? [value] : { roomId: value };
  Object.defineProperty(value, fc.toStringMethod, { value: () => `<${asArray ? 'array' : 'object'} nested ${depth} deep>` });
  return value;
});

const leaf = fc.oneof(hostileString, hugeNumber, fc.boolean(), fc.constant(null), fc.constant(undefined), fc.date({ noInvalidDate: true }), binary);
const anything = fc.oneof(
  { weight: 4, arbitrary: fc.anything({ key: hostileKey, values: [leaf], maxDepth: 4, maxKeys: 6, withNullPrototype: true, withSparseArray: true, withTypedArray: true, withDate: true, withObjectString: true }) },
  { weight: 1, arbitrary: deep },
  { weight: 1, arbitrary: leaf },
);

interface Fixture {
  room: TestRoom; // the fuzzing agent is a member
  foreignRoom: TestRoom; // it is not
  messageIds: string[];
  peerId: string; // another agent: dm:open's agentId
  taskIds: string[]; // tasks assigned to the agent: task:move's taskId
  streamedIds: string[]; // open streamed messages of the agent's: message:append's and message:end's messageId
  askedIds: string[]; // messages asking the agent for an acknowledgement: message:ack's messageId
}

/** Payload objects with every field of every event, each anything from valid to hostile. */
function allFields(f: Fixture): fc.Arbitrary<Record<string, unknown>> {
  const uuid = fc.oneof(fc.constantFrom(f.room.id, f.room.id.toUpperCase(), f.foreignRoom.id, ...f.messageIds), fc.uuid(), hostileString, anything);
  return fc.record(
    {
      roomId: uuid,
      body: fc.oneof(hostileString, fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }), fc.constantFrom('', ' ', 'x'.repeat(16_384), 'x'.repeat(16_385), '😀'.repeat(16_385)), anything),
      before: uuid,
      cursor: uuid,
      limit: fc.oneof(hugeNumber, fc.integer({ min: -5, max: 200 }), hostileString, anything),
      mentions: fc.oneof(fc.array(uuid, { maxLength: 5 }), fc.array(fc.uuid(), { minLength: 99, maxLength: 102 }), anything),
      replyTo: uuid,
      clientMsgId: fc.oneof(fc.string({ unit: 'binary', minLength: 0, maxLength: 70 }), fc.constantFrom('fixed-id', 'fixed-id-2'), anything),
      requestId: fc.oneof(hostileString, fc.string({ minLength: 120, maxLength: 140 }), anything),
      ['__proto__']: anything, // computed: an own key, as JSON.parse makes it on the server
      constructor: anything,
    },
    { requiredKeys: [] },
  );
}

/**
 * Payloads shaped for one event, each field mostly valid and sometimes not, plus now and then a
 * few hostile extra keys: these get past the envelope into the services' own checks and success paths.
 * `valid`: every field present and drawn from its valid values (the room, the ids and the state may
 * still be refused).
 */
function shapedFor(event: string, f: Fixture, valid = false): fc.Arbitrary<Record<string, unknown>> {
  const mostly = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> => (valid ? good : fc.oneof({ weight: 5, arbitrary: good }, { weight: 1, arbitrary: anything }));
  const roomId = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(f.room.id, f.room.id.toUpperCase()) }, { weight: 1, arbitrary: fc.constantFrom(f.foreignRoom.id, ...f.messageIds) }, { weight: 1, arbitrary: fc.uuid() }, { weight: 1, arbitrary: anything });
  const ownMessage = mostly(fc.constantFrom(f.messageIds[0]!));
  const fields: Record<string, Record<string, fc.Arbitrary<unknown>>> = {
    'room:join': { roomId },
    'room:leave': { roomId },
    'room:list': {},
    'message:send': {
      roomId,
      body: mostly(fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 50 }))),
      // Random ids are never members (a refusal): mostly none, so that sends also succeed.
      mentions: mostly(fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.uuid(), { maxLength: 3 }) })),
      replyTo: ownMessage,
      clientMsgId: mostly(fc.string({ minLength: 1, maxLength: 64 })),
      data: mostly(fc.oneof(fc.constant(null), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }))),
      // A file must be the sender's own completed upload: the fixtures have none, so mostly [].
      attachments: mostly(fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.uuid(), { maxLength: 3 }) })),
    },
    'message:history': { roomId, before: ownMessage, cursor: ownMessage, limit: mostly(fc.integer({ min: 1, max: 100 })) },
    'room:sync': { roomId, afterSeq: mostly(fc.integer({ min: 0, max: 5 })), limit: mostly(fc.integer({ min: 1, max: 100 })) },
    'room:read': { roomId, seq: mostly(fc.integer({ min: 0, max: 1 })) },
    'dm:open': { agentId: mostly(fc.constantFrom(f.peerId, f.peerId.toUpperCase())) },
    'activity:set': { roomId, state: mostly(fc.constantFrom('typing', 'working', 'idle')), text: mostly(fc.string({ maxLength: 80 })) },
    'message:append': { roomId, messageId: mostly(fc.constantFrom(...f.streamedIds)), text: mostly(fc.string({ unit: 'binary', minLength: 1, maxLength: 50 })) },
    'message:end': { roomId, messageId: mostly(fc.constantFrom(...f.streamedIds)), body: mostly(fc.string({ unit: 'binary', minLength: 1, maxLength: 50 })) },
    'message:ack': { roomId, messageId: mostly(fc.constantFrom(...f.askedIds)) },
    'message:thread': { roomId, messageId: ownMessage, afterSeq: mostly(fc.nat(5)), limit: mostly(fc.integer({ min: 1, max: 100 })) },
    'task:move': {
      taskId: mostly(fc.constantFrom(...f.taskIds)),
      // Moves the assignee may make, mostly (refusals come from `mostly` and from tasks already moved on).
      state: mostly(fc.constantFrom('working', 'input-required', 'completed', 'failed', 'rejected')),
      message: mostly(fc.record({ body: fc.string({ minLength: 1, maxLength: 50 }) })),
      result: mostly(fc.oneof(fc.constant(null), fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }))),
    },
  };
  const spec = fields[event] ?? { roomId };
  const model: Record<string, fc.Arbitrary<unknown>> = { ...spec, requestId: mostly(fc.string({ maxLength: 128 })) };
  return fc.tuple(
    fc.record(model, { requiredKeys: valid ? Object.keys(spec) : 'roomId' in spec ? ['roomId'] : 'taskId' in spec ? ['taskId', 'state'] : [] }),
    valid ? fc.constant(null) : fc.option(fc.dictionary(hostileKey, anything, { maxKeys: 2 }), { freq: 3 }),
  ).map(([base, extra]) => {
    // defineProperty, not assignment: an extra "__proto__" key stays an own key.
    for (const [key, value] of Object.entries(extra ?? {})) Object.defineProperty(base, key, { value, enumerable: true, configurable: true, writable: true });
    return base;
  });
}

const eventName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...CLIENT_EVENTS) },
  { weight: 1, arbitrary: fc.constantFrom('error', 'message', 'agent:hello-ack', 'message:new', 'presence:update', '__proto__', 'constructor', 'hasOwnProperty', 'toString', 'room:join ', 'ROOM:JOIN') },
  { weight: 1, arbitrary: hostileString.filter((s) => !['connect', 'connect_error', 'disconnect', 'disconnecting', 'newListener', 'removeListener'].includes(s)) },
);

interface Emission {
  event: string;
  args: unknown[];
  withAck: boolean;
}

function emission(f: Fixture): fc.Arbitrary<Emission> {
  return eventName.chain((event) => {
    const payload = fc.oneof(
      { weight: 4, arbitrary: shapedFor(event, f) },
      { weight: 2, arbitrary: allFields(f) },
      { weight: 2, arbitrary: anything },
      { weight: 1, arbitrary: fc.dictionary(hostileKey, anything, { maxKeys: 5 }) },
    );
    return fc.record({
      event: fc.constant(event),
      // Usually one argument; sometimes none, sometimes extra ones.
      args: fc.oneof({ weight: 6, arbitrary: payload.map((p) => [p]) }, { weight: 1, arbitrary: fc.constant<unknown[]>([]) }, { weight: 1, arbitrary: fc.array(payload, { minLength: 2, maxLength: 3 }) }),
      withAck: fc.boolean(),
    });
  });
}

// ---- the test -----------------------------------------------------------------------------------

describe('WebSocket fuzzing (fast-check)', () => {
  let server: TestServer;
  let app: RunningApp;
  let api: Api;
  let admin: TestAgent;
  let agent: TestAgent;
  let fixture: Fixture;
  const serverLog: string[] = [];
  const prototypeNames = (): string[] => [Object.prototype, Array.prototype, Function.prototype, String.prototype].flatMap((p) => Object.getOwnPropertyNames(p));
  let protoBefore: string[];

  beforeAll(async () => {
    // Limits out of the way: the fuzzer sends hundreds of events a second from one connection.
    const ws = { ...testConfig().ws, eventsPerSecond: 1_000_000, abuseEventsPerSecond: 1_000_000 };
    const config = { rateLimit: { anonPerMinute: 1_000_000, agentPerMinute: 1_000_000 }, ws };
    // Warnings and errors of the server are kept: an internal error is a failure even if no client saw it.
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => (serverLog.push(chunk.toString('utf8')), done()) });
    server = await startTestServer({ config, logger: pino({ level: 'warn' }, sink) });
    app = server.app;
    api = new Api(app.url);
    admin = await newAdmin(api);
    agent = await newAgent(api);
    const room = await newRoom(api, admin, [agent]);
    const foreignRoom = await newRoom(api, admin, [admin]);
    const messageIds = [(await sendMessage(api, agent, room.id, 'first')).id, (await sendMessage(api, admin, foreignRoom.id, 'foreign')).id];
    // Tasks the agent is the assignee of, so that task:move reaches its success path (each takes a few moves).
    const taskIds: string[] = [];
    for (let i = 0; i < 30; i++) {
      const made = await api.post('/api/v1/tasks', { assignee: agent.id, title: `fuzz ${i}` }, { jwt: admin.jwt });
      if (made.status !== 201) throw new Error(`task fixture: ${made.status}`);
      taskIds.push(made.body.id as string);
    }
    // Streamed messages of the agent's, open until the fuzzer ends them (docs/streaming.md).
    const streamedIds: string[] = [];
    for (let i = 0; i < 20; i++) {
      const started = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: `streamed ${i}`, streaming: true }, { jwt: agent.jwt });
      if (started.status !== 201) throw new Error(`streamed fixture: ${started.status}`);
      streamedIds.push(started.body.id as string);
    }
    // A message that asks the agent for an acknowledgement (docs/acknowledgements.md).
    const asked = await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'please acknowledge', ackRequired: true }, { jwt: admin.jwt });
    if (asked.status !== 201) throw new Error(`ack fixture: ${asked.status}`);
    fixture = { room, foreignRoom, messageIds, peerId: admin.id, taskIds, streamedIds, askedIds: [asked.body.id as string] };
    protoBefore = prototypeNames();
  });
  afterAll(async () => {
    await server?.close();
  });

  it(`every event, arbitrary payloads, with and without acks: known shapes only, never a crash (seed ${SEED})`, async () => {
    const { socket } = await connectReady(app.url, agent.jwt);
    const errors = record(socket, 'error');
    const disconnects = record(socket, 'disconnect');
    const counts = { acks: 0, errorAcks: 0, successAcks: 0, withoutAck: 0, unsendable: 0 };
    const succeeded = new Map<string, number>();
    // socket.io-client itself cannot encode some values (an own "__proto__" key next to a binary
    // attachment: its deconstructPacket assigns it). Those never reach a server from this client;
    // the raw-frame property below sends such JSON directly.
    const unsendable = (err: unknown): boolean => {
      if (err instanceof Error && /timed out/.test(err.message)) return false;
      (socket as unknown as { flags: object }).flags = {}; // emit() threw before resetting them
      counts.unsendable++;
      return true;
    };

    const emitAndCheck = async ({ event, args, withAck }: Emission): Promise<void> => {
      if (!withAck) {
        try {
          socket.emit(event, ...args);
        } catch (err) {
          if (unsendable(err)) return;
          throw err;
        }
        counts.withoutAck++;
        return;
      }
      let ack: unknown;
      try {
        ack = await socket.timeout(3000).emitWithAck(event, ...args);
      } catch (err) {
        if (unsendable(err)) return;
        throw err;
      }
      counts.acks++;
      if (isErrorAck(ack)) {
        counts.errorAcks++;
        return;
      }
      const success = SUCCESS[event];
      expect(success !== undefined && isObject(ack) && success(ack), `${event} ack ${JSON.stringify(ack)?.slice(0, 300)}`).toBe(true);
      counts.successAcks++;
      succeeded.set(event, (succeeded.get(event) ?? 0) + 1);
    };
    await fc.assert(fc.asyncProperty(emission(fixture), emitAndCheck), { seed: SEED, numRuns: RUNS, endOnFailure: true });
    // Then every event with valid-shaped payloads and an ack: among the hostile ones above, an event
    // with seven fields (message:send) reached its success path only 0 to 4 times in 1,000 runs.
    const validEmission = fc.constantFrom(...CLIENT_EVENTS).chain((event) => shapedFor(event, fixture, true).map((payload) => ({ event, args: [payload], withAck: true })));
    await fc.assert(fc.asyncProperty(validEmission, emitAndCheck), { seed: SEED, numRuns: Math.ceil(RUNS / 4), endOnFailure: true });

    await roundTrip(socket); // every error event the fuzzing caused has arrived
    expect(disconnects).toEqual([]);
    const malformed = errors.filter((e: Payload) => !isErrorEvent(e));
    expect(malformed, JSON.stringify(malformed.slice(0, 3))).toEqual([]);
    if (process.env.AMS_TEST_REPORT) console.warn(`ws fuzz (seed ${SEED}): ${JSON.stringify(counts)}, successes ${JSON.stringify(Object.fromEntries(succeeded))}, ${errors.length} error events`);
    // The fuzzer got past validation into every event's success path, not just errors.
    expect([...succeeded.keys()].sort()).toEqual([...CLIENT_EVENTS].sort());
    expect(counts.errorAcks).toBeGreaterThan(0);
    socket.disconnect();
  });

  it('raw Socket.IO frames (malformed packets, reserved names, bad attachments, deep JSON, binary garbage): the connection may be closed, the server stays up', async () => {
    const frame = fc.oneof(
      fc.tuple(fc.constantFrom('42/agents,', '43/agents,1', '4', '40/agents,', '41/agents,', '44/agents,', '45', '451-/agents,', '452-/agents,0', '42/nope,', '42'), fc.oneof(hostileString, fc.json({ maxDepth: 4 }))).map(([head, tail]) => ({ text: head + tail })),
      fc.constantFrom(...['connect', 'connect_error', 'disconnect', 'disconnecting', 'newListener', 'removeListener', 'error'].map((name) => ({ text: `42/agents,["${name}",{}]` }))),
      fc.constantFrom(
        { text: `42/agents,${'['.repeat(100_000)}` },
        { text: `42/agents,["message:send",${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}]` },
        { text: `42/agents,["message:send",${'['.repeat(5_000)}${']'.repeat(5_000)}]` },
        { text: '42/agents,["message:send",{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}]' },
        { text: '451-/agents,["message:send",{"_placeholder":true,"num":7}]' },
        { text: '451-/agents,["message:send",{"_placeholder":true,"num":0}]', then: Buffer.from([1, 2, 3]) },
        { text: '450-/agents,["message:send",{"_placeholder":true,"num":0}]' },
        { text: '42/agents,["message:send",{"roomId":"x","body":"\\ud800"}]' },
      ),
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({ binary: Buffer.from(bytes) })),
      fc.constant({ invalidUtf8: Buffer.from([0x34, 0x32, 0xff, 0xfe]) }),
    );

    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 4 }), async (frames) => {
        const raw = await rawAgentSocket(app.url, agent.jwt);
        try {
          for (const f of frames) {
            if ('text' in f) raw.send(f.text);
            if ('then' in f && f.then) raw.send(f.then, 0x2);
            if ('binary' in f) raw.send(f.binary, 0x2);
            if ('invalidUtf8' in f) raw.send(f.invalidUtf8, 0x1);
          }
          // Whatever happened to that connection, the server answers a fresh one at once.
          const probe = await RawWebSocket.open(app.url, '/socket.io/?EIO=4&transport=websocket');
          await probe.next((t) => t.startsWith('0{'));
          probe.destroy();
        } finally {
          raw.destroy();
        }
      }),
      { seed: SEED, numRuns: Math.max(20, Math.floor(RUNS / 5)) },
    );
  });

  it('afterwards: nothing polluted, no internal error logged, and a normal client works end to end', async () => {
    expect(prototypeNames()).toEqual(protoBefore);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const probe: Record<string, unknown> = {};
    expect(Object.keys(probe)).toEqual([]);
    for (const key in probe) throw new Error(`inherited enumerable key ${key}`);

    const internal = serverLog.filter((l) => /"level":(50|60)/.test(l));
    expect(internal, internal.slice(0, 3).join('\n')).toEqual([]);

    const other = await newAgent(api);
    expect((await api.post(`/rooms/${fixture.room.id}/members`, { agentId: other.id })).status).toBe(201);
    const a = await connectReady(app.url, agent.jwt);
    const b = await connectReady(app.url, other.jwt);
    const arrived = waitFor(b.socket, 'message:new', (m) => m.body === 'still works');
    const ack = await emitWithAck(a.socket, 'message:send', { roomId: fixture.room.id, body: 'still works' });
    expect(ack).toEqual({ messageId: expect.stringMatching(UUID_RE), seq: expect.any(Number) });
    expect((await arrived).id).toBe(ack.messageId);
    const page = await emitWithAck(b.socket, 'message:history', { roomId: fixture.room.id, limit: 1 });
    expect(page.messages[0]).toMatchObject({ id: ack.messageId, authorAgentId: agent.id, body: 'still works' });
    expect((await api.get('/healthz')).status).toBe(200);
    a.socket.disconnect();
    b.socket.disconnect();
  });
});
