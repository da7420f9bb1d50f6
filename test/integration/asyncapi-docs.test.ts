import { DiagnosticSeverity, Parser } from '@asyncapi/parser';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { io, type Socket } from 'socket.io-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_EVENTS } from '../../src/realtime/protocol.js';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { closed } from '../helpers/schema.js';
import { useTestServer } from '../helpers/suite.js';

/**
 * docs/protocol.md, The API describes itself: /asyncapi.json (AsyncAPI 3.1 of the /agents namespace) validates with
 * @asyncapi/parser and real events match it; /docs is served by the service itself, no CDN.
 */

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

type Json = Record<string, unknown>;
interface AsyncMessage { name: string; payload: Json }
interface AsyncApiDocument {
  asyncapi: string;
  channels: Record<string, { address: string; messages: Record<string, AsyncMessage> }>;
  operations: Record<string, { action: 'send' | 'receive'; messages: { $ref: string }[]; reply?: { messages: { $ref: string }[] } }>;
}

describe('/asyncapi.json and /docs', () => {
  const { server, api } = useTestServer();
  let document: AsyncApiDocument;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    const res = await api.get('/asyncapi.json');
    expect(res.status).toBe(200);
    document = res.body as AsyncApiDocument;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.disconnect();
  });

  const messages = (): AsyncMessage[] => Object.values(document.channels.agents!.messages);
  const messageNamed = (name: string): AsyncMessage => {
    const found = messages().find((m) => m.name === name);
    if (!found) throw new Error(`no message named ${name}`);
    return found;
  };

  it('is a valid AsyncAPI 3.1 document, the latest version @asyncapi/parser knows (it reports no error and no warning)', async () => {
    expect(document.asyncapi).toBe('3.1.0');
    const { document: parsed, diagnostics } = await new Parser().parse(JSON.stringify(document));
    expect(diagnostics.filter((d) => d.severity <= DiagnosticSeverity.Warning).map((d) => `${d.code} at ${d.path.join('.')}: ${d.message}`)).toEqual([]);
    expect(parsed).toBeDefined();
    expect(parsed!.channels().get('agents')?.address()).toBe('/agents');
  });

  it('names every client event with its acknowledgement and every server event', () => {
    const names = messages().map((m) => m.name);
    for (const event of CLIENT_EVENTS) {
      expect(names).toContain(event);
      const operation = Object.values(document.operations).find((op) => op.action === 'receive' && op.messages.some((ref) => ref.$ref.endsWith(`/${Object.entries(document.channels.agents!.messages).find(([, m]) => m.name === event)![0]}`)));
      expect(operation?.reply?.messages.length, event).toBe(2);
    }
    const serverEvents = ['message:new', 'message:updated', 'message:deleted', 'presence:update', 'agent:hello-ack', 'room:added', 'room:removed', 'room:positions', 'activity:update', 'task:updated', 'lease:updated', 'message:delta', 'error',
      'message:acked'];
    for (const event of serverEvents) {
      expect(names).toContain(event);
    }
    expect(Object.values(document.operations).filter((op) => op.action === 'send')).toHaveLength(serverEvents.length);
  });

  it('real events and acknowledgements match their documented payloads', async () => {
    const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
    const check = (name: string, value: unknown): void => {
      const validate = ajv.compile(closed(messageNamed(name).payload) as Json);
      if (!validate(value)) throw new Error(`${name}: ${ajv.errorsText(validate.errors)}: ${JSON.stringify(value)}`);
    };
    const admin: TestAgent = await newAdmin(api);
    const alice = await newAgent(api);
    const room = await newRoom(api, admin, [alice]);
    const socket = io(`${server.url}/agents`, { transports: ['websocket'], query: { token: alice.jwt }, reconnection: false });
    sockets.push(socket);
    const hello = await new Promise<unknown>((resolve) => socket.once('agent:hello-ack', resolve));
    check('agent:hello-ack', hello);
    const emit = (event: string, payload: unknown): Promise<unknown> => socket.timeout(5000).emitWithAck(event, payload);

    check('room:join', { roomId: room.id, requestId: 'r1' });
    check('room:join (ack)', await emit('room:join', { roomId: room.id, requestId: 'r1' }));
    check('room:list (ack)', await emit('room:list', {}));
    const newMessage = new Promise<unknown>((resolve) => socket.once('message:new', resolve));
    const sendPayload = { roomId: room.id, body: 'hello', clientMsgId: 'k1', requestId: 'r2' };
    check('message:send', sendPayload);
    check('message:send (ack)', await emit('message:send', sendPayload));
    check('message:new', await newMessage);
    check('message:history (ack)', await emit('message:history', { roomId: room.id, limit: 10 }));
    check('room:leave (ack)', await emit('room:leave', { roomId: room.id }));
    check('ack:error', await emit('message:send', { roomId: room.id, body: '' }));
    const error = new Promise<unknown>((resolve) => socket.once('error', resolve));
    socket.emit('room:join', { roomId: 'nope', requestId: 'r3' });
    check('error', await error);

    // Presence of another agent's socket, seen by alice.
    await emit('room:join', { roomId: room.id });
    const presence = new Promise<unknown>((resolve) => socket.once('presence:update', resolve));
    const other = io(`${server.url}/agents`, { transports: ['websocket'], query: { token: admin.jwt }, reconnection: false });
    sockets.push(other);
    check('presence:update', await presence);
  });

  it('/docs is rendered by the service: every script and style it references is served here, no other host', async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'/);
    const html = await page.text();
    const absolute = [...html.matchAll(/https?:\/\/[^\s"'<>)]+/g)].map((m) => m[0]).filter((u) => new URL(u).host !== new URL(server.url).host);
    expect(absolute).toEqual([]);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.filter((a) => a.endsWith('.js')).length).toBeGreaterThanOrEqual(3);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const url = new URL(asset, `${server.url}/docs`);
      expect(url.host, asset).toBe(new URL(server.url).host);
      const res = await fetch(url);
      expect(res.status, asset).toBe(200);
      await res.arrayBuffer();
    }
    // The UI loads the document from the service too.
    const initializer = await (await fetch(new URL(assets.find((a) => a.endsWith('swagger-initializer.js'))!, `${server.url}/docs`))).text();
    expect(initializer).toContain("resolveUrl('./json')");
    const spec = await api.get('/docs/json');
    expect(spec.status).toBe(200);
    expect(spec.body).toEqual((await api.get('/openapi.json')).body);
  });
});
