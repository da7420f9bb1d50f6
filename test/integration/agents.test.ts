import { describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { newAgent, uniqueName } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const NAME_PATTERN_MESSAGE = 'must match pattern ^[a-z0-9][a-z0-9-]{0,63}$';

describe('agents: POST /api/v1/agents and GET /api/v1/agents', () => {
  const t = useTestServer();

  const valid = () => ({ name: uniqueName('a'), displayName: 'Agent Smith', role: 'agent' });

  it('creates an agent: 201 with exactly the Agent fields', async () => {
    const input = valid();
    const res = await t.api.post('/api/v1/agents', input);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(res.body).sort()).toEqual(['createdAt', 'description', 'disabledAt', 'displayName', 'id', 'name', 'role', 'skills']);
    expect(res.body).toMatchObject(input);
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(res.body.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('creates admins too, and accepts the extreme lengths of the rules', async () => {
    const name = `z${'9'.repeat(63)}`; // 64 characters, the maximum
    const displayName = '🤖'.repeat(128); // 128 code points, 256 UTF-16 units
    const res = await t.api.post('/api/v1/agents', { name, displayName, role: 'admin' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name, displayName, role: 'admin' });
    const one = await t.api.post('/api/v1/agents', { name: `x-${uniqueName('b')}`.slice(0, 64), displayName: 'x', role: 'agent' });
    expect(one.status).toBe(201);
  });

  it.each([
    ['uppercase', 'Agent'],
    ['leading hyphen', '-agent'],
    ['underscore', 'an_agent'],
    ['space', 'an agent'],
    ['empty', ''],
    ['65 characters', 'a'.repeat(65)],
    ['non-ASCII letter', 'agént'],
  ])('rejects a name with %s: 400, details.name describes the pattern', async (_case, name) => {
    const res = await t.api.post('/api/v1/agents', { ...valid(), name });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.any(String), details: { name: NAME_PATTERN_MESSAGE } });
  });

  it('rejects displayName outside 1..128 code points and non-strings', async () => {
    for (const displayName of ['', 'x'.repeat(129), '🤖'.repeat(129), 42, null]) {
      const res = await t.api.post('/api/v1/agents', { ...valid(), displayName });
      expect(res.status, JSON.stringify(displayName)).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['displayName']);
      expect(typeof res.body.details.displayName).toBe('string');
    }
  });

  it('rejects a role other than admin or agent', async () => {
    for (const role of ['root', 'Admin', '', 1, undefined]) {
      const res = await t.api.post('/api/v1/agents', { ...valid(), role });
      expect(res.status, String(role)).toBe(400);
      expect(Object.keys(res.body.details)).toEqual(['role']);
    }
    const res = await t.api.post('/api/v1/agents', { ...valid(), role: 'root' });
    expect(res.body.details.role).toBe('must be one of "admin", "agent"');
  });

  it('names every missing field at once', async () => {
    const res = await t.api.post('/api/v1/agents', {});
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ name: 'is required', displayName: 'is required', role: 'is required' });
  });

  it('rejects a body that is not a JSON object', async () => {
    for (const rawBody of ['[]', 'null', '"agent"', '42']) {
      const res = await t.api.request('POST', '/api/v1/agents', { rawBody });
      expect(res.status, rawBody).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), details: { body: 'must be a JSON object' } });
    }
    const none = await t.api.request('POST', '/api/v1/agents');
    expect(none.status).toBe(400);
    expect(none.body.details).toEqual({ body: 'must be a JSON object' });
  });

  it('rejects NUL and unpaired surrogates in text fields (JSON escapes)', async () => {
    const base = valid();
    const nul = await t.api.request('POST', '/api/v1/agents', { rawBody: `{"name":"${base.name}","displayName":"a\\u0000b","role":"agent"}` });
    expect(nul.status).toBe(400);
    expect(nul.body.details).toEqual({ displayName: 'must not contain NUL characters' });
    const lone = await t.api.request('POST', '/api/v1/agents', { rawBody: `{"name":"${base.name}","displayName":"a\\ud800b","role":"agent"}` });
    expect(lone.status).toBe(400);
    expect(lone.body.details).toEqual({ displayName: 'must be valid Unicode (no unpaired surrogates)' });
    // Nothing was created by either attempt.
    const list = await t.api.get('/api/v1/agents');
    expect(list.body.map((a: { name: string }) => a.name)).not.toContain(base.name);
  });

  it('answers 409 on a duplicate name and keeps the first agent', async () => {
    const input = valid();
    const first = await t.api.post('/api/v1/agents', input);
    expect(first.status).toBe(201);
    const second = await t.api.post('/api/v1/agents', { ...input, displayName: 'Other', role: 'admin' });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ error: expect.stringContaining(input.name) });
    const list = await t.api.get('/api/v1/agents');
    const matching = list.body.filter((a: { name: string }) => a.name === input.name);
    expect(matching).toEqual([first.body]);
  });

  it('lists agents as a JSON array of Agent objects, without any token material', async () => {
    const agent = await newAgent(t.api);
    const res = await t.api.get('/api/v1/agents');
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    const found = res.body.find((a: { id: string }) => a.id === agent.id);
    expect(found).toEqual({ id: agent.id, name: agent.name, displayName: `Test ${agent.name}`, role: 'agent', createdAt: expect.any(String), disabledAt: null, description: '', skills: [] });
    for (const a of res.body) expect(Object.keys(a).sort()).toEqual(['createdAt', 'description', 'disabledAt', 'displayName', 'id', 'name', 'role', 'skills']);
    const secret = agent.apiToken.split('_')[2]!;
    expect(JSON.stringify(res.body)).not.toContain(secret);
    expect(JSON.stringify(res.body)).not.toContain(agent.prefix);
  });

  it('writes an agent-created audit record in the same change', async () => {
    const input = { ...valid(), role: 'admin' };
    const res = await t.api.post('/api/v1/agents', input);
    const records = await listAudit(t.server.app.ctx.database.db, 'agent-created', 1000);
    const record = records.find((r) => r.subjectId === res.body.id);
    expect(record).toMatchObject({ event: 'agent-created', subjectId: res.body.id, detail: { name: input.name, role: 'admin' } });
    expect(record!.createdAt).toMatch(/Z$/);
    // A refused duplicate leaves no record behind.
    await t.api.post('/api/v1/agents', input);
    const after = await listAudit(t.server.app.ctx.database.db, 'agent-created', 1000);
    expect(after.filter((r) => (r.detail as { name?: string }).name === input.name)).toHaveLength(1);
  });
});
