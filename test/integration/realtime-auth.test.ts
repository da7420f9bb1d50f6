import { createHmac } from 'node:crypto';
import { io } from 'socket.io-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, newAdminAgentRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { connect, connectReady, disconnected, emitWithAck, expectAuthFailed, record, waitFor } from '../helpers/ws.js';
import { untilPast } from '../helpers/wait.js';

const b64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');
const claimsOf = (jwt: string): { agentId: string; role: string; iat: number; exp: number } =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));

describe('WebSocket handshake authentication', () => {
  const t = useTestServer();
  let agent: TestAgent;
  let roomId: string;

  beforeAll(async () => ({ agent, roomId } = await newAdminAgentRoom(t.api)));

  it('refuses a connection without a token', async () => {
    expect(await expectAuthFailed(connect(t.server.url, undefined))).toMatch(/token/i);
  });

  it('refuses a tampered JWT (payload changed, signature kept)', async () => {
    const [header, , signature] = agent.jwt.split('.');
    const forged = b64url(JSON.stringify({ ...claimsOf(agent.jwt), role: 'admin' }));
    await expectAuthFailed(connect(t.server.url, `${header}.${forged}.${signature}`));
  });

  it('refuses a JWT signed with another secret, with alg none, or without exp', async () => {
    const now = Math.floor(Date.now() / 1000);
    const sign = (header: object, claims: object, secret: string): string => {
      const unsigned = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
      return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
    };
    const claims = { agentId: agent.id, role: 'agent', iat: now, exp: now + 600 };
    await expectAuthFailed(connect(t.server.url, sign({ alg: 'HS256', typ: 'JWT' }, claims, 'another-secret-another-secret-0123456789')));
    await expectAuthFailed(connect(t.server.url, `${b64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${b64url(JSON.stringify(claims))}.`));
    await expectAuthFailed(connect(t.server.url, 'not-a-jwt'));
  });

  it('refuses an API token in place of a JWT', async () => {
    expect(await expectAuthFailed(connect(t.server.url, agent.apiToken))).toMatch(/API token/);
  });

  it('runs no handler of any other event for a refused socket', async () => {
    const socket = connect(t.server.url, 'not-a-jwt');
    // Emitted as soon as the client may: before the server's error arrives. Only the one
    // AUTH_FAILED error may come back (expectAuthFailure), and nothing is stored.
    socket.on('connect', () => socket.emit('message:send', { roomId, body: 'sneaky' }));
    await expectAuthFailed(socket);
    const audit = await t.server.app.ctx.database.db.selectFrom('messages').select('id').where('body', '=', 'sneaky').execute();
    expect(audit).toEqual([]);
  });

  it('accepts a valid token in auth.token even when the query carries a stale one', async () => {
    const { hello } = await connectReady(t.server.url, agent.jwt, { tokenIn: 'auth', query: { token: 'stale' } });
    expect(hello.agentId).toBe(agent.id);
  });

  it('tells a client of the main namespace to use /agents', async () => {
    const socket = io(t.server.url, { transports: ['websocket'], reconnection: false, forceNew: true, query: { token: agent.jwt } });
    const error = waitFor(socket, 'error');
    const gone = disconnected(socket);
    expect(await error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining('/agents') });
    expect(await gone).toBe('io server disconnect');
  });

  it('open mode (JWTs are irrevocable): revoking the API token leaves its live sockets up', async () => {
    // Strict mode ends them: test/reliability/ws-revocation.test.ts.
    const holder = await newAgent(t.api);
    const { socket } = await connectReady(t.server.url, holder.jwt);
    const errors = record(socket, 'error');
    expect((await t.api.delete(`/api/v1/tokens/${holder.prefix}`)).status).toBe(204);
    expect(await emitWithAck(socket, 'room:list')).toEqual({ rooms: [] });
    expect(socket.connected).toBe(true);
    expect(errors).toEqual([]);
    socket.disconnect();
  });
});

describe('WebSocket handshake with an expired JWT', () => {
  const { server } = useTestServer({ config: { jwtTtlSeconds: 1 } });

  it('refuses it with AUTH_FAILED; a fresh JWT for the same agent connects and re-joins its rooms', async () => {
    const api = new Api(server.url);
    const admin = await newAdmin(api);
    const agent = await newAgent(api);
    const room = await newRoom(api, admin, [agent]);
    const { exp } = claimsOf(agent.jwt);
    await untilPast(exp * 1000);

    expect(await expectAuthFailed(connect(server.url, agent.jwt))).toMatch(/expired|invalid/i);

    const session = await api.post('/api/v1/sessions', { apiToken: agent.apiToken });
    expect(session.status).toBe(201);
    const { socket, hello } = await connectReady(server.url, session.body.token);
    expect(hello).toEqual({ agentId: agent.id, rooms: [room.id], lastSeqs: { [room.id]: expect.any(Number) } });
    socket.disconnect();
  });
});
