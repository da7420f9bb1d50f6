import { beforeAll, describe, expect, it } from 'vitest';
import type { RunningApp } from '../../src/app.js';
import { createMemoryPresence, type PresenceTracker } from '../../src/presence/presence-tracker.js';
import { Api, newAdmin, newAgent, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

/** Presence the test controls; asserts the directory asks about exactly the agents it lists. */
function fakePresence(): PresenceTracker & { online: Set<string>; asked: string[][] } {
  const fake = Object.assign(createMemoryPresence(), { online: new Set<string>(), asked: [] as string[][] });
  fake.onlineAgents = (agentIds: string[]) => {
    fake.asked.push(agentIds);
    return Promise.resolve(new Set(agentIds.filter((id) => fake.online.has(id))));
  };
  return fake;
}

type Entry = { id: string; name: string; displayName: string; role: string; online: boolean };

describe('agent directory', () => {
  const presence = fakePresence();
  const { server } = useTestServer({ config: { companyId: 'acme' }, context: { presence } });
  let app: RunningApp;
  let api: Api;
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  const path = (companyId = 'acme', query = '') => `/api/companies/${companyId}/agents/directory${query}`;

  beforeAll(async () => {
    app = server.app;
    api = new Api(app.url);
    admin = await newAdmin(api);
    alice = await newAgent(api);
    bob = await newAgent(api);
  });

  it('lists every agent with the documented fields and total', async () => {
    const res = await api.get(path(), { jwt: alice.jwt });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      companyId: 'acme',
      agents: [
        { id: admin.id, name: admin.name, displayName: `Test ${admin.name}`, role: 'admin', online: false, description: '', skills: [] },
        { id: alice.id, name: alice.name, displayName: `Test ${alice.name}`, role: 'agent', online: false, description: '', skills: [] },
        { id: bob.id, name: bob.name, displayName: `Test ${bob.name}`, role: 'agent', online: false, description: '', skills: [] },
      ],
      total: 3,
    });
  });

  it('filters by role; total counts the filtered list', async () => {
    const admins = await api.get(path('acme', '?role=admin'), { jwt: bob.jwt });
    expect(admins.status).toBe(200);
    expect(admins.body.agents.map((a: Entry) => a.id)).toEqual([admin.id]);
    expect(admins.body.total).toBe(1);
    const agents = await api.get(path('acme', '?role=agent'), { jwt: bob.jwt });
    expect(agents.body.agents.map((a: Entry) => a.id)).toEqual([alice.id, bob.id]);
    expect(agents.body.total).toBe(2);
    expect(agents.body.agents.every((a: Entry) => a.role === 'agent')).toBe(true);
  });

  it('a role other than admin or agent is 400 with details', async () => {
    for (const query of ['?role=superuser', '?role=ADMIN', '?role=admin%20', '?role=admin&role=agent']) {
      const res = await api.get(path('acme', query), { jwt: alice.jwt });
      expect(res.status, query).toBe(400);
      expect(res.body).toEqual({ error: expect.any(String), details: { role: expect.any(String) } });
    }
  });

  it('shows online exactly the agents presence reports', async () => {
    presence.online = new Set([alice.id]);
    presence.asked = [];
    const res = await api.get(path(), { jwt: bob.jwt });
    const online = Object.fromEntries(res.body.agents.map((a: Entry) => [a.id, a.online]));
    expect(online).toEqual({ [admin.id]: false, [alice.id]: true, [bob.id]: false });
    expect(presence.asked).toEqual([[admin.id, alice.id, bob.id]]);

    presence.online = new Set([admin.id, bob.id]);
    const filtered = await api.get(path('acme', '?role=agent'), { jwt: bob.jwt });
    expect(filtered.body.agents.map((a: Entry) => [a.id, a.online])).toEqual([[alice.id, false], [bob.id, true]]);
    presence.online = new Set();
  });

  it('an unknown company is 404; no JWT is 401', async () => {
    for (const company of ['default', 'ACME', 'other']) {
      const res = await api.get(path(company), { jwt: alice.jwt });
      expect(res.status, company).toBe(404);
      expect(res.body).toEqual({ error: expect.any(String) });
    }
    expect((await api.get(path())).status).toBe(401);
    expect((await api.get(path(), { jwt: 'garbage' })).status).toBe(401);
    expect((await api.get(path(), { jwt: alice.apiToken })).status).toBe(401);
  });
});

describe('agent directory with the default configuration', () => {
  const t = useTestServer();

  it('serves the company "default"; an agent without a connection is offline', async () => {
    const agent = await newAgent(t.api);
    const res = await t.api.get('/api/companies/default/agents/directory', { jwt: agent.jwt });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ companyId: 'default', agents: [expect.objectContaining({ id: agent.id, online: false })], total: 1 });
    expect((await t.api.get('/api/companies/acme/agents/directory', { jwt: agent.jwt })).status).toBe(404);
  });
});
