import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp } from '../../src/app.js';
import type { Config } from '../../src/config/config.js';
import { testConfig } from '../helpers/config.js';
import { createLogger } from '../../src/logger.js';
import { anotherSession, Api, bootstrapAdmin, newAgent, type TestAgent } from '../helpers/api.js';
import { configFor, createTestDatabase, startTestServer, type TestDatabase, type TestServer } from '../helpers/server.js';
import { useTestServer } from '../helpers/suite.js';
import { connect, connectReady, disconnected, emitWithAck, waitFor, type ClientSocket, type Payload } from '../helpers/ws.js';
import { RawWebSocket, rawAgentSocket } from '../helpers/raw-ws.js';
import { waitUntil } from '../helpers/wait.js';

/**
 * Abuse at the door: the per-agent connection cap, the Origin allow-list, and the JWT of
 * the handshake URL never reaching the logs.
 */

const wsConfig = (overrides: Partial<Config['ws']>): Config['ws'] => ({ ...testConfig().ws, ...overrides });

/** How one connection attempt ended: hello, or the error event and the disconnect that followed. */
async function outcome(socket: ClientSocket): Promise<{ hello: boolean; error?: Payload; reason?: string }> {
  const error = waitFor(socket, 'error').catch(() => undefined);
  const hello = waitFor(socket, 'agent:hello-ack').then(() => true, () => false);
  const gone = disconnected(socket);
  const first = await Promise.race([hello.then((ok) => (ok ? 'hello' : 'none')), gone.then(() => 'gone')]);
  if (first === 'hello') return { hello: true };
  return { hello: false, error: await error, reason: await gone };
}

describe('connections per agent (WS_MAX_CONNECTIONS_PER_AGENT)', () => {
  const CAP = 3;
  const { server, api } = useTestServer({ config: { ws: wsConfig({ maxConnectionsPerAgent: CAP }) } });


  it('a storm of simultaneous connections by one agent admits exactly the cap; the rest get RATE_LIMIT_EXCEEDED and a disconnect', async () => {
    const agent = await newAgent(api);
    const sockets = Array.from({ length: 4 * CAP }, () => connect(server.url, agent.jwt));
    const results = await Promise.all(sockets.map(outcome));
    const admitted = results.filter((r) => r.hello);
    const refused = results.filter((r) => !r.hello);
    expect(admitted).toHaveLength(CAP);
    for (const r of refused) {
      expect(r.error).toEqual({ code: 'RATE_LIMIT_EXCEEDED', message: expect.stringContaining(`at most ${CAP}`) });
      expect(r.reason).toBe('io server disconnect');
    }
    expect(await server.app.ctx.presence.connectionCount(agent.id)).toBe(CAP);

    // The cap is per agent: another agent connects freely meanwhile, also with several tokens.
    const other = await newAgent(api);
    const otherSockets = [await connectReady(server.url, other.jwt), await connectReady(server.url, (await anotherSession(api, other)).jwt)];
    // A slot freed is a slot usable again; the count never goes above the cap.
    const live = sockets.filter((s) => s.connected);
    live[0]!.disconnect();
    await waitUntil('the server to count CAP - 1 connections', async () => (await server.app.ctx.presence.connectionCount(agent.id)) === CAP - 1);
    const again = await connectReady(server.url, agent.jwt);
    expect((await outcome(connect(server.url, agent.jwt))).error?.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(await server.app.ctx.presence.connectionCount(agent.id)).toBe(CAP);
    for (const s of [...live, again.socket, ...otherSockets.map((o) => o.socket)]) s.disconnect();
    await waitUntil('the server to count no connection', async () => (await server.app.ctx.presence.connectionCount(agent.id)) === 0);
  });

  it('counts raw (non socket.io-client) connections the same way', async () => {
    const agent = await newAgent(api);
    const raws = await Promise.all(Array.from({ length: CAP }, () => rawAgentSocket(server.url, agent.jwt)));
    const extra = await RawWebSocket.open(server.url, `/socket.io/?EIO=4&transport=websocket&token=${encodeURIComponent(agent.jwt)}`);
    await extra.next((t) => t.startsWith('0{'));
    extra.send('40/agents,');
    expect(await extra.next((t) => t.startsWith('42/agents,["error"'))).toContain('RATE_LIMIT_EXCEEDED');
    expect(await extra.next((t) => t.startsWith('41/agents'))).toBe('41/agents,'); // the server's disconnect
    for (const raw of [...raws, extra]) raw.destroy();
    await waitUntil('the server to count no connection', async () => (await server.app.ctx.presence.connectionCount(agent.id)) === 0);
  });
});

describe('Origin allow-list (WS_ALLOWED_ORIGINS)', () => {
  const ALLOWED = 'https://app.example';
  let server: TestServer;
  let open: TestServer;
  let agent: TestAgent;

  beforeAll(async () => {
    [server, open] = await Promise.all([
      startTestServer({ config: { ws: wsConfig({ allowedOrigins: [ALLOWED, 'http://localhost:5173'] }) } }),
      startTestServer(), // WS_ALLOWED_ORIGINS unset: any Origin
    ]);
    agent = await newAgent(new Api(server.url));
  });
  afterAll(() => Promise.all([server.close(), open.close()]));

  const pollingHandshake = (base: string, jwt: string, origin?: string): Promise<Response> =>
    fetch(`${base}/socket.io/?EIO=4&transport=polling&token=${encodeURIComponent(jwt)}`, { headers: origin === undefined ? {} : { origin } });

  it('refuses a browser whose Origin is not listed: WebSocket upgrade 400, long-polling handshake 403, socket.io-client connect_error', async () => {
    for (const origin of ['https://evil.example', 'null', 'https://app.example.evil.example', 'http://app.example', `${ALLOWED}:8443`]) {
      await expect(RawWebSocket.open(server.url, `/socket.io/?EIO=4&transport=websocket&token=${encodeURIComponent(agent.jwt)}`, { origin }), origin)
        .rejects.toThrow(/upgrade refused: HTTP\/1.1 400/);
      const polling = await pollingHandshake(server.url, agent.jwt, origin);
      expect(polling.status, origin).toBe(403);
      expect(await polling.json()).toEqual({ code: 4, message: 'Origin not allowed' });
    }
    const browser = connect(server.url, agent.jwt, { extraHeaders: { origin: 'https://evil.example' } });
    expect((await waitFor<Error>(browser, 'connect_error')).message).toBeTruthy();
    browser.disconnect();
  });

  it('accepts a listed Origin, on both transports', async () => {
    for (const origin of [ALLOWED, 'http://localhost:5173']) {
      const { socket, hello } = await connectReady(server.url, agent.jwt, { extraHeaders: { origin } });
      expect(hello.agentId).toBe(agent.id);
      socket.disconnect();
      const polling = await pollingHandshake(server.url, agent.jwt, origin);
      expect(polling.status).toBe(200);
      expect(await polling.text()).toMatch(/^0\{"sid":/);
      const viaPolling = await connectReady(server.url, agent.jwt, { transports: ['polling'], extraHeaders: { origin } });
      viaPolling.socket.disconnect();
    }
  });

  it('accepts a client that sends no Origin (not a browser)', async () => {
    const { socket } = await connectReady(server.url, agent.jwt);
    expect(await emitWithAck(socket, 'room:list')).toEqual({ rooms: [] });
    socket.disconnect();
    const raw = await rawAgentSocket(server.url, agent.jwt);
    raw.destroy();
  });

  it('accepts any Origin when the list is not configured', async () => {
    const other = await newAgent(new Api(open.url));
    const { socket } = await connectReady(open.url, other.jwt, { extraHeaders: { origin: 'https://evil.example' } });
    socket.disconnect();
  });
});

describe('the handshake JWT never reaches the logs (LOG_LEVEL=trace)', () => {
  let db: TestDatabase;
  const lines: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('captures trace output of WebSocket and polling handshakes (valid, invalid, revoked, refused): no JWT or API token in it', async () => {
    // The production logger (redaction, serializers), at its most verbose, into memory; strict mode
    // so that revocation paths log too.
    const logger = createLogger('trace', { write: (line: string) => void lines.push(line) });
    const config = configFor(db.url, { authzMode: 'strict', logLevel: 'trace', rateLimit: { anonPerMinute: 100_000, agentPerMinute: 100_000 }, ws: wsConfig({ maxConnectionsPerAgent: 2, allowedOrigins: ['https://app.example'] }) });
    const app = await startApp(config, logger);
    const secrets: string[] = [];
    try {
      const api = new Api(app.url);
      const admin = await bootstrapAdmin(app.ctx.database.db, api);
      const agent = await newAgent(api, { asJwt: admin.jwt });
      const room = await api.post('/rooms', { slug: `logs-${Date.now()}`, name: 'Logs', members: [agent.id] }, { jwt: admin.jwt });
      expect(room.status).toBe(201);
      secrets.push(admin.jwt, agent.jwt, admin.apiToken, agent.apiToken);

      // Valid handshakes: query token over WebSocket and long-polling, and auth.token.
      const a = await connectReady(app.url, agent.jwt);
      await emitWithAck(a.socket, 'message:send', { roomId: room.body.id, body: 'logged?' });
      const b = await connectReady(app.url, agent.jwt, { transports: ['polling'] });
      // Over the cap (2): refused, with the token in the URL.
      expect((await outcome(connect(app.url, agent.jwt))).error?.code).toBe('RATE_LIMIT_EXCEEDED');
      a.socket.disconnect();
      b.socket.disconnect();
      const c = await connectReady(app.url, admin.jwt, { tokenIn: 'auth' });
      c.socket.disconnect();
      // Invalid ones: a tampered JWT, an API token instead of a JWT, a refused Origin.
      const [header, payload] = agent.jwt.split('.');
      const tampered = `${header}.${payload}.${'A'.repeat(43)}`;
      secrets.push(tampered);
      expect((await outcome(connect(app.url, tampered))).error?.code).toBe('AUTH_FAILED');
      expect((await outcome(connect(app.url, agent.apiToken))).error?.code).toBe('AUTH_FAILED');
      const refused = connect(app.url, agent.jwt, { extraHeaders: { origin: 'https://evil.example' } });
      await waitFor(refused, 'connect_error');
      refused.disconnect();
      // A REST call with the JWT in the query string as well as the header.
      await api.get(`/api/v1/rooms?token=${agent.jwt}`, { jwt: agent.jwt });
      // Revoked: the live socket is ended, the next handshake refused.
      const d = await connectReady(app.url, agent.jwt);
      const ended = disconnected(d.socket);
      expect((await api.delete(`/api/v1/tokens/${agent.prefix}`, { jwt: admin.jwt })).status).toBe(204);
      await ended;
      expect((await outcome(connect(app.url, agent.jwt))).error?.code).toBe('AUTH_FAILED');
    } finally {
      await app.close();
    }

    const output = lines.join('');
    // The capture works: the realtime layer's trace/debug lines are in it.
    expect(output).toContain('websocket connected');
    expect(output).toContain('websocket disconnected');
    for (const secret of secrets) {
      const [first, second, third] = secret.split(/[._]/).filter((part) => part.length >= 16);
      for (const fragment of [secret, first, second, third].filter((f): f is string => f !== undefined)) {
        expect(output.includes(fragment), `log output contains a fragment of ${secret.slice(0, 12)}...`).toBe(false);
      }
    }
  });
});
