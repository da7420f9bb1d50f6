import { describe, expect, it } from 'vitest';
import { AmsClient } from '@agent-messaging/client';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { bootstrapAdmin, newAdmin, newAgent, scopedSession, type Api, type TestAgent } from '../helpers/api.js';
import { ensureBuilt } from '../helpers/build.js';
import { runAms } from '../helpers/cli.js';
import { callTool, connectMcp } from '../helpers/mcp.js';
import { useTestServer } from '../helpers/suite.js';

// docs/protocol.md, Agent profiles: PATCH /api/v1/agents/:id {displayName?, description?, skills?},
// shown on Agent objects, directory entries, MCP whoami and list_agents, on the suite's engine.

const patch = (api: Api, jwt: string | undefined, id: string, body: unknown) =>
  api.request('PATCH', `/api/v1/agents/${id}`, { body, ...(jwt === undefined ? {} : { jwt }) });

const SKILLS = [
  { id: 'summarise', name: 'Summarise logs', description: 'Reads logs and says what went wrong', tags: ['logs', 'ops'] },
  { id: 'review', name: 'Review a patch' },
];
const STORED_SKILLS = [SKILLS[0], { id: 'review', name: 'Review a patch', description: '', tags: [] }];

const directoryEntry = async (api: Api, jwt: string, id: string) =>
  ((await api.get('/api/companies/default/agents/directory', { jwt })).body.agents as { id: string }[]).find((a) => a.id === id);

describe('agent profiles (open mode)', () => {
  const t = useTestServer();

  it('a new agent has description "" and no skills; the agent sets its own, shown everywhere, audited', async () => {
    const created = await t.api.post('/api/v1/agents', { name: `profile-${Date.now().toString(36)}`, displayName: 'Profile', role: 'agent' });
    expect(created.body).toMatchObject({ description: '', skills: [] });
    const agent = await newAgent(t.api);
    const res = await patch(t.api, agent.jwt, agent.id, { description: 'Watches the build and reports', skills: SKILLS });
    expect(res.status).toBe(200);
    const expected = {
      id: agent.id, name: agent.name, displayName: `Test ${agent.name}`, role: 'agent', createdAt: expect.any(String), disabledAt: null,
      description: 'Watches the build and reports', skills: STORED_SKILLS,
    };
    expect(res.body).toEqual(expected);
    expect(((await t.api.get('/api/v1/agents')).body as { id: string }[]).find((a) => a.id === agent.id)).toEqual(expected);
    expect(await directoryEntry(t.api, agent.jwt, agent.id)).toEqual({
      id: agent.id, name: agent.name, displayName: `Test ${agent.name}`, role: 'agent', online: false,
      description: 'Watches the build and reports', skills: STORED_SKILLS,
    });

    // A later PATCH replaces only the fields it gives.
    const renamed = await patch(t.api, agent.jwt, agent.id, { displayName: 'Build Watcher' });
    expect(renamed.body).toEqual({ ...expected, displayName: 'Build Watcher' });
    expect((await patch(t.api, agent.jwt, agent.id, { skills: [] })).body.skills).toEqual([]);

    const records = (await listAudit(t.server.app.ctx.database.db, 'agent-updated')).filter((r) => r.subjectId === agent.id);
    expect(records.map((r) => [r.actorId, r.detail])).toEqual([
      [agent.id, { fields: ['skills'] }], [agent.id, { fields: ['displayName'] }], [agent.id, { fields: ['description', 'skills'] }],
    ]);
    expect((await t.api.get(`/api/v1/audit?event=agent-updated&subjectId=${agent.id}`, { jwt: (await newAdmin(t.api)).jwt })).body.records).toHaveLength(3);
  });

  it('MCP whoami and list_agents show the description and skills; the client library updates', async () => {
    const agent = await newAgent(t.api);
    const client = new AmsClient({ url: t.server.url, apiToken: agent.apiToken });
    try {
      expect(await client.updateAgent(agent.id, { description: 'Answers questions about billing', skills: [SKILLS[0]!] })).toMatchObject({ id: agent.id, skills: [SKILLS[0]] });
    } finally {
      await client.close();
    }
    const mcp = await connectMcp(t.server.url, agent.jwt);
    try {
      const me = await callTool(mcp, 'whoami');
      expect(me.data).toEqual({ agentId: agent.id, name: agent.name, displayName: `Test ${agent.name}`, role: 'agent', description: 'Answers questions about billing', skills: [SKILLS[0]] });
      expect(me.text).toContain('Answers questions about billing');
      const listed = await callTool(mcp, 'list_agents');
      expect(listed.data.agents.find((a: { id: string }) => a.id === agent.id)).toMatchObject({ description: 'Answers questions about billing', skills: [SKILLS[0]] });
      expect(listed.text).toContain(`${agent.name} "Test ${agent.name}" (id ${agent.id}, agent, offline): Answers questions about billing; skills: Summarise logs`);
    } finally {
      await mcp.close();
    }
  });

  it('who may: itself or an admin; 401 without a JWT, 403 another agent, 404 unknown, 400 a bad id', async () => {
    const admin = await newAdmin(t.api);
    const agent = await newAgent(t.api);
    const other = await newAgent(t.api);
    expect((await patch(t.api, admin.jwt, agent.id, { description: 'set by an admin' })).body.description).toBe('set by an admin');
    expect((await patch(t.api, undefined, agent.id, { description: 'x' })).status).toBe(401);
    expect((await patch(t.api, other.jwt, agent.id, { description: 'x' })).status).toBe(403);
    expect((await patch(t.api, admin.jwt, '0190a0a0-0000-7000-8000-000000000000', { description: 'x' })).status).toBe(404);
    expect(await patch(t.api, admin.jwt, 'nope', { description: 'x' })).toMatchObject({ status: 400, body: { details: { id: 'must be a UUID' } } });
    // A scoped token: its own agent needs no action; another agent needs admin.
    expect((await patch(t.api, await scopedSession(t.api, agent, { actions: [] }), agent.id, { description: 'mine' })).status).toBe(200);
    const withoutAdmin = await scopedSession(t.api, admin, { actions: ['messages:read'] }, admin.jwt);
    expect(await patch(t.api, withoutAdmin, agent.id, { description: 'x' })).toMatchObject({ status: 403, body: { details: { scope: 'admin required' } } });
    expect((await t.api.get('/api/v1/agents')).body.find((a: { id: string }) => a.id === agent.id).description).toBe('mine');
  });

  it('400 for every field out of its limits, naming it; the largest profile fits', async () => {
    const agent = await newAgent(t.api);
    const skill = (i: number) => ({ id: `s${i}`, name: 'n' });
    const cases: [unknown, string][] = [
      [{}, 'body'],
      [{ displayName: '' }, 'displayName'],
      [{ description: 'x'.repeat(1001) }, 'description'],
      [{ description: 7 }, 'description'],
      [{ skills: 'summarise' }, 'skills'],
      [{ skills: Array.from({ length: 21 }, (_, i) => skill(i)) }, 'skills'],
      [{ skills: [{ id: '', name: 'n' }] }, 'skills[0].id'],
      [{ skills: [{ id: 'a'.repeat(65), name: 'n' }] }, 'skills[0].id'],
      [{ skills: [skill(0), { id: 's1' }] }, 'skills[1].name'],
      [{ skills: [{ ...skill(0), description: 'd'.repeat(501) }] }, 'skills[0].description'],
      [{ skills: [{ ...skill(0), tags: Array(11).fill('t') }] }, 'skills[0].tags'],
      [{ skills: [{ ...skill(0), tags: ['t'.repeat(33)] }] }, 'skills[0].tags[0]'],
      [{ skills: [{ ...skill(0), tags: [''] }] }, 'skills[0].tags[0]'],
      [{ skills: [{ ...skill(0), extra: true }] }, 'skills[0].extra'],
      [{ skills: [skill(0), skill(1), skill(0)] }, 'skills[2].id'],
      [{ description: 'nul \u0000' }, 'description'],
    ];
    for (const [body, path] of cases) {
      const res = await patch(t.api, agent.jwt, agent.id, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      // Keyed by the request's field (the path up to its first item); the message names the item.
      const field = path.split('[')[0]!;
      expect(Object.keys(res.body.details), JSON.stringify(body).slice(0, 80)).toEqual([field]);
      if (path !== field) expect(res.body.details[field]).toMatch(new RegExp(`^${path.replace(/[[\].]/g, '\\$&')}: `));
    }
    // Every limit at its maximum, in characters of 12 escaped bytes each: within the body limit.
    const big = '\u{1F600}'; // one code point: two UTF-16 units, 12 bytes escaped
    const full = {
      displayName: big.repeat(128),
      description: big.repeat(1000),
      skills: Array.from({ length: 20 }, (_, i) => ({
        id: `${i}`.padEnd(64, 'x'), name: big.repeat(100), description: big.repeat(500), tags: Array.from({ length: 10 }, () => big.repeat(32)),
      })),
    };
    const rawBody = JSON.stringify(full).replace(/[\u0080-\uffff]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`);
    expect(rawBody.length).toBeGreaterThan(200_000);
    const res = await t.api.request('PATCH', `/api/v1/agents/${agent.id}`, { rawBody, jwt: agent.jwt });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject(full);
  });

  it('ams agents update sets the profile by the agent\'s name; a bad --skills is a usage error', { timeout: 120_000 }, async () => {
    await ensureBuilt();
    const admin = await newAdmin(t.api);
    const agent = await newAgent(t.api);
    const ams = (token: string, ...args: string[]) => runAms({ AMS_URL: t.server.url, AMS_API_TOKEN: token }, ...args);
    const res = await ams(admin.apiToken, 'agents', 'update', agent.name, '--description', 'Set from the command line', '--skills', JSON.stringify([SKILLS[1]]));
    expect(res).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(res.stdout)).toMatchObject({ id: agent.id, description: 'Set from the command line', skills: [STORED_SKILLS[1]] });
    expect(await ams(agent.apiToken, 'agents', 'update', agent.id, '--display-name', '')).toMatchObject({ code: 1, stderr: expect.stringContaining('--display-name') });
    expect(await ams(agent.apiToken, 'agents', 'update', agent.id, '--skills', '[oops')).toMatchObject({ code: 2, stderr: expect.stringContaining('--skills must be a JSON array') });
    expect(await ams(agent.apiToken, 'agents', 'update', agent.id)).toMatchObject({ code: 2 });
  });
});

describe('agent profiles (strict mode)', () => {
  const t = useTestServer({ config: { authzMode: 'strict' } });

  it('the agent itself and an admin may; another agent 403, no JWT 401', async () => {
    const root: TestAgent = await bootstrapAdmin(t.server.app.ctx.database.db, t.api);
    const agent = await newAgent(t.api, { asJwt: root.jwt });
    const other = await newAgent(t.api, { asJwt: root.jwt });
    expect((await patch(t.api, agent.jwt, agent.id, { description: 'mine' })).status).toBe(200);
    expect((await patch(t.api, root.jwt, agent.id, { skills: SKILLS })).body).toMatchObject({ description: 'mine', skills: STORED_SKILLS });
    expect((await patch(t.api, other.jwt, agent.id, { description: 'x' })).status).toBe(403);
    expect((await patch(t.api, undefined, agent.id, { description: 'x' })).status).toBe(401);
    expect(await directoryEntry(t.api, other.jwt, agent.id)).toMatchObject({ description: 'mine', skills: STORED_SKILLS });
  });
});
