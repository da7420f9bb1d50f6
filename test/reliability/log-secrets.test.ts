import { beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { createLogger, scrubSecrets } from '../../src/logger.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

/** No credential ever reaches the logs, even at trace level. */
describe('credentials in logs', () => {
  const lines: string[] = [];
  const { server } = useTestServer({ config: { logLevel: 'trace', webhooks: { retryScheduleSeconds: [], allowPrivateTargets: true } }, logger: createLogger('trace', { write: (line: string) => void lines.push(line) }) });
  let app: RunningApp;
  let api: Api;
  let admin: TestAgent;
  let agent: TestAgent;

  beforeAll(async () => {
    app = server.app;
    api = new Api(app.url);
  });

  it('a whole flow at trace level logs requests but none of the API tokens, JWTs or their parts', async () => {
    admin = await newAdmin(api);
    agent = await newAgent(api);
    const room = await newRoom(api, admin, [agent]);
    const jwt = agent.jwt;
    const bodySession = await api.post('/api/v1/sessions', { apiToken: agent.apiToken });
    expect(bodySession.status).toBe(201);
    const secrets = [agent.apiToken, admin.apiToken, jwt, admin.jwt, bodySession.body.token as string];

    // The JWT in the URL, as the WebSocket handshake carries it, on real and unknown routes.
    for (const path of [
      `/api/v1/rooms?token=${jwt}`,
      `/healthz?token=${jwt}`,
      `/socket.io/?EIO=4&transport=polling&token=${jwt}`,
      `/agents?token=${jwt}&x=1`,
      `/api/v1/rooms/${room.id}/messages?limit=5&token=${jwt}`,
      `/api/v1/rooms/not-a-uuid/messages?token=${agent.apiToken}`,
      `/nowhere/${jwt}`,
    ]) {
      const res = await api.get(path);
      expect(res.status).toBeLessThan(500);
    }
    // Credentials in places they do not belong: a body, a malformed body, a bad header, a bad token.
    await api.post(`/api/v1/rooms/${room.id}/messages`, { body: `my token is ${agent.apiToken}` }, { jwt });
    await api.request('POST', '/api/v1/sessions', { rawBody: `{"apiToken": "${agent.apiToken}"`, headers: { 'content-type': 'application/json' } });
    await api.post('/api/v1/sessions', undefined, { headers: { authorization: `Bearer ${agent.apiToken}x` } });
    await api.post('/api/v1/sessions', { apiToken: `${agent.apiToken.slice(0, -1)}0` });
    await api.get('/api/v1/agents', { headers: { authorization: `Bearer ${jwt}.tampered` } });
    await api.get('/api/v1/agents', { headers: { authorization: `Basic ${Buffer.from(`x:${agent.apiToken}`).toString('base64')}` } });
    await api.post('/rooms', { slug: 'x', name: 'y' }, { headers: { 'x-agent-id': jwt } });
    expect((await api.delete(`/api/v1/tokens/${agent.prefix}`)).status).toBe(204);

    const log = lines.join('');
    expect(lines.length).toBeGreaterThan(30);
    expect(log).toContain('/api/v1/rooms'); // the requests were logged, without their query strings
    const leaks: string[] = [];
    for (const secret of secrets) {
      const [header, payload, signature] = secret.split('.');
      const parts = secret.startsWith('agt_') ? [secret, secret.split('_')[2]!] : [secret, `${header}.${payload}`, signature!];
      for (const part of parts) if (log.includes(part)) leaks.push(part.slice(0, 12));
    }
    expect(leaks).toEqual([]);
  });

  it('a webhook secret is shown in its 201 only: never logged, not even while deliveries fail', async () => {
    const owner = await newAgent(api);
    const sender = await newAdmin(api);
    const room = await newRoom(api, sender, [owner]);
    // Port 9 on loopback (discard): nothing listens, every attempt fails.
    const created = await api.post(`/api/v1/agents/${owner.id}/webhooks`, { url: 'http://127.0.0.1:9/hook', mode: 'always' }, { jwt: owner.jwt });
    expect(created.status).toBe(201);
    const secret = created.body.secret as string;
    await api.post(`/api/v1/rooms/${room.id}/messages`, { body: 'for the hook' }, { jwt: sender.jwt });
    const deliveries = `/api/v1/agents/${owner.id}/webhooks/${created.body.id as string}/deliveries`;
    await waitUntil('the failed delivery', async () => (await api.get(deliveries, { jwt: owner.jwt })).body.deliveries[0]?.status === 'failed');
    const listed = await api.get(`/api/v1/agents/${owner.id}/webhooks`, { jwt: owner.jwt });
    expect(JSON.stringify(listed.body)).not.toContain(secret.slice(6));
    expect(lines.join('')).not.toContain(secret.slice(6));
  });

  it('scrubSecrets removes JWTs, API token secrets, bearer values and token query parameters from any text', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJhZ2VudElkIjoiYSJ9.c2lnbmF0dXJl';
    const apiToken = `agt_0123456789ab_${'f'.repeat(64)}`;
    const line = JSON.stringify({ msg: `GET /agents?EIO=4&token=abc.def&x=1 ${jwt} ${apiToken} Authorization: Bearer opaque-value`, url: `/x?access_token=zzz` });
    const scrubbed = scrubSecrets(line);
    for (const secret of [jwt, 'f'.repeat(64), 'abc.def', 'opaque-value', 'zzz']) expect(scrubbed).not.toContain(secret);
    expect(scrubbed).toContain('agt_0123456789ab_'); // the public prefix stays, for operators
    expect(scrubbed).toContain('&x=1');
    expect(() => JSON.parse(scrubbed) as unknown).not.toThrow();
  });

  it('errors are logged without stack traces at info level, with them at debug', () => {
    const capture = (level: 'info' | 'debug'): string => {
      const out: string[] = [];
      createLogger(level, { write: (line: string) => void out.push(line) }).error({ err: new Error('boom') }, 'failed');
      return out.join('');
    };
    expect(capture('info')).toContain('boom');
    expect(capture('info')).not.toContain('"stack"');
    expect(capture('debug')).toContain('"stack"');
  });
});
