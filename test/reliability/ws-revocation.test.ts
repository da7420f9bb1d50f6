import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { anotherSession, Api, bootstrapAdmin, newAgent, type TestAgent } from '../helpers/api.js';
import { startTestNodes, type TestNodes } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { connect, connectReady, emitWithAck, expectAuthFailed, record } from '../helpers/ws.js';
import { servicesAvailable } from '../helpers/services.js';

/**
 * In strict mode only (open mode keeps JWTs irrevocable, docs/protocol.md), revoking an API token
 * ends the JWTs issued from it: REST 401, handshake AUTH_FAILED, live sockets disconnected at once,
 * on every node. In open mode nothing of that happens.
 */

describe('strict mode: revoking an API token ends its sessions', () => {
  const { server, api } = useTestServer({ config: { authzMode: 'strict' } });
  let admin: TestAgent;

  beforeAll(async () => {
    admin = await bootstrapAdmin(server.app.ctx.database.db, api);
  });

  it('REST 401, handshake AUTH_FAILED, live sockets error+disconnect; the same agent\'s other token is untouched', async () => {
    const agent = await newAgent(api, { asJwt: admin.jwt });
    const second = await anotherSession(api, agent, admin.jwt); // same agent, another API token
    const room = await api.post('/rooms', { slug: `rev-${randomUUID().slice(0, 8)}`, name: 'R', members: [agent.id] }, { jwt: admin.jwt });
    expect(room.status).toBe(201);

    // Before: both sessions work (and the first fills this node's token cache).
    expect((await api.get('/api/v1/rooms', { jwt: agent.jwt })).status).toBe(200);
    expect((await api.get('/api/v1/rooms', { jwt: second.jwt })).status).toBe(200);
    const doomed = await connectReady(server.url, agent.jwt);
    const doomedToo = await connectReady(server.url, agent.jwt, { tokenIn: 'auth' });
    const kept = await connectReady(server.url, second.jwt);
    const keptErrors = record(kept.socket, 'error');
    const gone = [expectAuthFailed(doomed.socket), expectAuthFailed(doomedToo.socket)];

    expect((await api.delete(`/api/v1/tokens/${agent.prefix}`, { jwt: admin.jwt })).status).toBe(204);

    // Live sockets of that token: AUTH_FAILED, then disconnected.
    for (const message of await Promise.all(gone)) expect(message).toMatch(/revoked/);
    // REST: at once, although "not revoked" was cached a moment ago.
    const refused = await api.get('/api/v1/rooms', { jwt: agent.jwt });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: expect.any(String) });
    expect((await api.post(`/api/v1/rooms/${room.body.id}/messages`, { body: 'after revocation' }, { jwt: agent.jwt })).status).toBe(401);
    // A new handshake with it: AUTH_FAILED.
    expect(await expectAuthFailed(connect(server.url, agent.jwt))).toMatch(/revoked/);
    // No new session from the token either.
    expect((await api.post('/api/v1/sessions', { apiToken: agent.apiToken })).status).toBe(401);

    // The other token of the same agent is not affected, on either interface.
    expect((await api.get('/api/v1/rooms', { jwt: second.jwt })).status).toBe(200);
    expect(kept.socket.connected).toBe(true);
    expect(await emitWithAck(kept.socket, 'message:send', { roomId: room.body.id, body: 'still here' })).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
    expect(keptErrors).toEqual([]);
    kept.socket.disconnect();
  });

  it('refuses, in strict mode, a correctly signed JWT that names no API token (it could never be revoked)', async () => {
    const { createJwtCodec } = await import('../../src/core/auth/jwt.js');
    const { resolveJwtSecret } = await import('../../src/core/auth/jwt-secret.js');
    const codec = createJwtCodec(await resolveJwtSecret(server.app.ctx.database.db, server.app.ctx.config.jwtSecret), 300);
    const orphan = codec.sign({ agentId: admin.id, role: 'admin' }).token;
    expect((await api.get('/api/v1/agents', { jwt: orphan })).status).toBe(401);
    await expectAuthFailed(connect(server.url, orphan));
    // The same claims with the admin's real token id are fine: the signature is not the problem.
    const named = codec.sign({ agentId: admin.id, role: 'admin', tokenId: (await server.app.ctx.sessionAuth.authenticate(admin.jwt)).tokenId! }).token;
    expect((await api.get('/api/v1/agents', { jwt: named })).status).toBe(200);
  });

  it('a socket whose handshake passed just before the revocation committed is still disconnected', async () => {
    // The handshake's check reads the token state; the revocation lands between that read and the
    // socket joining its token's channel. The setup re-reads the state after the join.
    const agent = await newAgent(api, { asJwt: admin.jwt });
    const auth = server.app.ctx.sessionAuth;
    const realAuthenticate = auth.authenticate;
    auth.authenticate = async (jwt) => {
      const principal = await realAuthenticate(jwt); // passed: the token is active
      auth.authenticate = realAuthenticate;
      expect((await api.delete(`/api/v1/tokens/${agent.prefix}`, { jwt: admin.jwt })).status).toBe(204);
      return principal;
    };
    try {
      expect(await expectAuthFailed(connect(server.url, agent.jwt))).toMatch(/revoked/);
    } finally {
      auth.authenticate = realAuthenticate;
    }
  });
});

describe('open mode: JWTs are irrevocable', () => {
  const { server } = useTestServer();

  it('revoking the API token stops new exchanges only: its JWT keeps working on REST and WebSocket, live sockets stay', async () => {
    const api = new Api(server.url);
    const agent = await newAgent(api);
    const { socket } = await connectReady(server.url, agent.jwt);
    const errors = record(socket, 'error');
    expect((await api.delete(`/api/v1/tokens/${agent.prefix}`)).status).toBe(204);

    expect((await api.post('/api/v1/sessions', { apiToken: agent.apiToken })).status).toBe(401);
    expect((await api.get('/api/v1/rooms/01900000-0000-7000-8000-000000000000/messages', { jwt: agent.jwt })).status).toBe(404); // authenticated, not 401
    expect(await emitWithAck(socket, 'room:list')).toEqual({ rooms: [] });
    expect(socket.connected).toBe(true);
    const again = await connectReady(server.url, agent.jwt);
    expect(again.hello.agentId).toBe(agent.id);
    expect(errors).toEqual([]);
    again.socket.disconnect();
    socket.disconnect();
  });
});

const redisAvailable = await servicesAvailable('ws-revocation cross-node test', ['redis']);

describe.skipIf(!redisAvailable)('strict mode, two nodes on one Redis: revocation reaches every node at once', () => {
  let cluster: TestNodes;
  let node1: RunningApp;
  let node2: RunningApp;

  beforeAll(async () => {
    cluster = await startTestNodes(2, { config: { authzMode: 'strict' } });
    [node1, node2] = cluster.nodes.map((n) => n.app) as [RunningApp, RunningApp];
  });
  afterAll(() => cluster?.close());

  it('revoked on node 1: the socket on node 2 gets AUTH_FAILED and is disconnected; node 2 answers 401 right after the 204', async () => {
    const api1 = new Api(node1.url);
    const api2 = new Api(node2.url);
    const admin = await bootstrapAdmin(node1.ctx.database.db, api1);
    const agent = await newAgent(api1, { asJwt: admin.jwt });
    const { socket } = await connectReady(node2.url, agent.jwt);
    const ended = expectAuthFailed(socket);
    // Node 2 has cached "not revoked" for this token.
    expect((await api2.get('/api/v1/rooms', { jwt: agent.jwt })).status).toBe(200);

    expect((await api1.delete(`/api/v1/tokens/${agent.prefix}`, { jwt: admin.jwt })).status).toBe(204);
    // The revocation answered only once node 2 had acknowledged it: its cache is no longer trusted.
    expect((await api2.get('/api/v1/rooms', { jwt: agent.jwt })).status).toBe(401);
    expect((await api1.get('/api/v1/rooms', { jwt: agent.jwt })).status).toBe(401);
    expect(await ended).toMatch(/revoked/);
    await expectAuthFailed(connect(node2.url, agent.jwt));
  });
});
