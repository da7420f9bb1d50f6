import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, sendMessage } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const SPEC_METRICS: [string, string][] = [
  ['service_http_requests_total', 'counter'],
  ['service_websocket_latency_seconds', 'histogram'],
  ['service_messages_total', 'counter'],
  ['service_agents_connected', 'gauge'],
  ['rate_limit_exceeded_total', 'counter'],
];

/** The value of the sample of `name` whose labels include all of `labels`, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe('operational endpoints', () => {
  const t = useTestServer();

  it('GET /healthz: 200 {status: "ok"} without authentication', async () => {
    const res = await t.api.get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz: 200 {status: "ready", checks: {database: "ok"}}', async () => {
    const res = await t.api.get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok' } });
  });

  it('GET /metrics: Prometheus text with the five SPEC metrics and the default process metrics', async () => {
    const res = await t.api.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = res.body as string;
    for (const [name, type] of SPEC_METRICS) expect(text, name).toContain(`# TYPE ${name} ${type}`);
    expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(text).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
  });

  it('service_http_requests_total is labelled by method, route pattern and status', async () => {
    const admin = await newAdmin(t.api);
    const agent = await newAgent(t.api);
    const room = await newRoom(t.api, admin, [agent]);
    await sendMessage(t.api, agent, room.id, 'counted');
    for (let i = 0; i < 3; i++) await t.api.get(`/api/v1/rooms/${room.id}/messages`, { jwt: agent.jwt });
    await t.api.get('/api/v1/rooms/not-a-uuid/messages', { jwt: agent.jwt });
    await t.api.get('/no/such/route');
    const text = (await t.api.get('/metrics')).body as string;
    // The route is the pattern, never the concrete path (bounded label cardinality).
    expect(sample(text, 'service_http_requests_total', { method: 'GET', route: '/api/v1/rooms/:id/messages', status: '200' })).toBe(3);
    expect(sample(text, 'service_http_requests_total', { method: 'GET', route: '/api/v1/rooms/:id/messages', status: '400' })).toBe(1);
    expect(sample(text, 'service_http_requests_total', { method: 'POST', route: '/api/v1/rooms/:id/messages', status: '201' })).toBe(1);
    expect(sample(text, 'service_http_requests_total', { method: 'POST', route: '/api/v1/agents/:id/tokens', status: '201' })).toBe(2);
    expect(sample(text, 'service_http_requests_total', { method: 'POST', route: '/rooms', status: '201' })).toBe(1);
    expect(sample(text, 'service_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'service_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(text).not.toContain(room.id.concat('/messages'));
    expect(sample(text, 'service_messages_total', { room: room.id })).toBe(1);
    expect(sample(text, 'service_agents_connected', {})).toBe(0);
  });
});
