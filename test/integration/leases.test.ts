import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type Api, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import { connectReady, waitFor, type Payload } from '../helpers/ws.js';

// docs/leases.md: leases on resources over REST and lease:updated, on the suite's engine
// (AMS_TEST_DATABASE). Short ttls through the test-only AMS_TEST_MIN_LEASE_SECONDS (its config field).

const t = useTestServer({ config: { testMinLeaseSeconds: 1 } });

interface Team { admin: TestAgent; a: TestAgent; b: TestAgent; outsider: TestAgent; roomId: string }

async function newTeam(api: Api): Promise<Team> {
  const admin = await newAdmin(api);
  const [a, b, outsider] = [await newAgent(api), await newAgent(api), await newAgent(api)];
  return { admin, a, b, outsider, roomId: (await newRoom(api, admin, [a, b])).id };
}

const acquire = (team: Team, who: TestAgent, body: Record<string, unknown>) => t.api.post(`/api/v1/rooms/${team.roomId}/leases`, body, { jwt: who.jwt });

describe('leases on resources', () => {
  it('grants a lease with its fields and a growing fence; overlapping ones of others are 409 with the conflicts', async () => {
    const team = await newTeam(t.api);
    const first = await acquire(team, team.a, { resource: 'src/', reason: 'refactor', ttlSeconds: 600 });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toEqual({
      id: expect.any(String), roomId: team.roomId, resource: 'src/', holderId: team.a.id, exclusive: true, reason: 'refactor', fence: 1,
      expiresAt: expect.any(String), createdAt: expect.any(String),
    });
    expect(new Date(first.body.expiresAt).getTime() - new Date(first.body.createdAt).getTime()).toBe(600_000);
    // The holder's own leases never conflict.
    expect((await acquire(team, team.a, { resource: 'src/app.ts' })).body.fence).toBe(2);
    for (const resource of ['src/app.ts', 'src/', 'src/lib/', 'src/lib/x.ts']) {
      const refused = await acquire(team, team.b, { resource });
      expect(refused.status, resource).toBe(409);
      expect(refused.body.details.conflicts.map((l: Payload) => l.holderId)).toContain(team.a.id);
      expect(refused.body.details.conflicts[0]).toMatchObject({ roomId: team.roomId, holderId: team.a.id });
    }
    // Not overlapping: a sibling, a longer name without the slash, a prefix without the slash.
    for (const resource of ['srcs/app.ts', 'docs/', 'sr', 'src']) expect((await acquire(team, team.b, { resource })).status, resource).toBe(201);
    const fences = (await t.api.get(`/api/v1/rooms/${team.roomId}/leases`, { jwt: team.b.jwt })).body.leases.map((l: Payload) => l.fence);
    expect(fences).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('shared leases coexist; an exclusive one conflicts with them', async () => {
    const team = await newTeam(t.api);
    expect((await acquire(team, team.a, { resource: 'db/schema', exclusive: false })).status).toBe(201);
    expect((await acquire(team, team.b, { resource: 'db/schema', exclusive: false })).status).toBe(201);
    const refused = await acquire(team, team.b, { resource: 'db/', exclusive: true });
    expect(refused.status).toBe(409);
    expect(refused.body.details.conflicts).toHaveLength(1);
  });

  it('refuses bad resources, ttls, reasons and outsiders; lists overlapping leases for members', async () => {
    const team = await newTeam(t.api);
    const bad: [Record<string, unknown>, string][] = [
      [{ resource: '' }, 'resource'], [{ resource: 'x'.repeat(513) }, 'resource'], [{ resource: 'x'.repeat(10_000) }, 'resource'],
      [{ resource: 'a\u0000b' }, 'resource'], [{ resource: 'src/../etc' }, 'resource'], [{ resource: '..' }, 'resource'], [{ resource: 'a/..' }, 'resource'],
      [{ resource: 7 }, 'resource'], [{}, 'resource'],
      [{ resource: 'r', ttlSeconds: 0 }, 'ttlSeconds'], [{ resource: 'r', ttlSeconds: 86_401 }, 'ttlSeconds'], [{ resource: 'r', ttlSeconds: 2.5 }, 'ttlSeconds'], [{ resource: 'r', ttlSeconds: '60' }, 'ttlSeconds'],
      [{ resource: 'r', reason: 'x'.repeat(201) }, 'reason'], [{ resource: 'r', exclusive: 'yes' }, 'exclusive'],
    ];
    for (const [body, field] of bad) {
      const res = await acquire(team, team.a, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.details, JSON.stringify(body).slice(0, 80)).toHaveProperty(field);
    }
    expect((await acquire(team, team.a, { resource: 'x'.repeat(512), ttlSeconds: 86_400, reason: 'y'.repeat(200) })).status).toBe(201);
    expect((await acquire(team, team.a, { resource: 'a..b/c.d' })).status).toBe(201);
    expect((await acquire(team, team.outsider, { resource: 'r' })).status).toBe(403);
    expect((await t.api.post('/api/v1/rooms/01890000-0000-7000-8000-000000000000/leases', { resource: 'r' }, { jwt: team.a.jwt })).status).toBe(404);
    expect((await t.api.get(`/api/v1/rooms/${team.roomId}/leases`, { jwt: team.outsider.jwt })).status).toBe(403);
    await acquire(team, team.a, { resource: 'web/' });
    const listed = await t.api.get(`/api/v1/rooms/${team.roomId}/leases?resource=${encodeURIComponent('web/index.html')}`, { jwt: team.b.jwt });
    expect(listed.body.leases.map((l: Payload) => l.resource)).toEqual(['web/']);
  });

  it('a clientLeaseId repeat by the holder answers 200 with the live lease', async () => {
    const team = await newTeam(t.api);
    const first = await acquire(team, team.a, { resource: 'cfg', clientLeaseId: 'c-1' });
    expect(first.status).toBe(201);
    const again = await acquire(team, team.a, { resource: 'cfg', clientLeaseId: 'c-1' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
    const raced = await Promise.all([1, 2, 3].map(() => acquire(team, team.a, { resource: 'other', clientLeaseId: 'c-2' })));
    expect(new Set(raced.map((r) => r.body.id)).size).toBe(1);
    expect(raced.map((r) => r.status).sort()).toEqual([200, 200, 201]);
  });

  it('exactly one of concurrent conflicting requests wins', async () => {
    const team = await newTeam(t.api);
    const agents = [team.a, team.b, ...(await Promise.all([0, 1, 2].map(() => newAgent(t.api))))];
    for (const agent of agents.slice(2)) await t.api.post(`/rooms/${team.roomId}/members`, { agentId: agent.id }, { headers: { 'x-agent-id': team.admin.id } });
    const answers = await Promise.all(agents.map((agent, i) => acquire(team, agent, { resource: i % 2 === 0 ? 'pkg/' : 'pkg/index.ts' })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    for (const lost of answers.filter((a) => a.status !== 201)) {
      expect(lost.status).toBe(409);
      expect(lost.body.details.conflicts.map((l: Payload) => l.id)).toEqual([answers.find((a) => a.status === 201)!.body.id]);
    }
  });

  it('renew by the holder; release by the holder or an admin; gone is 404; lease:updated to members and the holder', async () => {
    const team = await newTeam(t.api);
    const { socket } = await connectReady(t.server.url, team.b.jwt);
    const holderSocket = (await connectReady(t.server.url, team.a.jwt)).socket;
    try {
      const granted = waitFor(socket, 'lease:updated', (e: Payload) => e.state === 'granted' && e.lease.resource === 'api/');
      const lease = (await acquire(team, team.a, { resource: 'api/', ttlSeconds: 60 })).body;
      expect((await granted).lease.id).toBe(lease.id);

      const renewedSeen = waitFor(socket, 'lease:updated', (e: Payload) => e.state === 'renewed' && e.lease.id === lease.id);
      const renewed = await t.api.post(`/api/v1/rooms/${team.roomId}/leases/${lease.id}/renew`, { ttlSeconds: 120 }, { jwt: team.a.jwt });
      expect(renewed.status).toBe(200);
      expect(renewed.body.expiresAt > lease.expiresAt).toBe(true);
      expect((await renewedSeen).lease.expiresAt).toBe(renewed.body.expiresAt);
      expect((await t.api.post(`/api/v1/rooms/${team.roomId}/leases/${lease.id}/renew`, {}, { jwt: team.b.jwt })).status).toBe(403);
      expect((await t.api.post(`/api/v1/rooms/${team.roomId}/leases/${lease.id}/renew`, { ttlSeconds: 0 }, { jwt: team.a.jwt })).status).toBe(400);
      expect((await t.api.delete(`/api/v1/rooms/${team.roomId}/leases/${lease.id}`, { jwt: team.b.jwt })).status).toBe(403);

      const released = waitFor(holderSocket, 'lease:updated', (e: Payload) => e.state === 'released' && e.lease.id === lease.id);
      expect((await t.api.delete(`/api/v1/rooms/${team.roomId}/leases/${lease.id}`, { jwt: team.admin.jwt })).status).toBe(204);
      await released;
      expect((await t.api.delete(`/api/v1/rooms/${team.roomId}/leases/${lease.id}`, { jwt: team.a.jwt })).status).toBe(404);
      expect((await t.api.post(`/api/v1/rooms/${team.roomId}/leases/${lease.id}/renew`, {}, { jwt: team.a.jwt })).status).toBe(404);
      // Released: b may take it now.
      expect((await acquire(team, team.b, { resource: 'api/x' })).status).toBe(201);

      const audit = await t.api.get(`/api/v1/audit?subjectId=${lease.id}`, { jwt: team.admin.jwt });
      expect(audit.body.records.map((e: Payload) => e.event)).toEqual(expect.arrayContaining(['lease-granted', 'lease-released']));
    } finally {
      socket.disconnect();
      holderSocket.disconnect();
    }
  });

  it('a lease ends at its expiresAt: no longer a conflict, announced once within 2 s, then 404', async () => {
    const team = await newTeam(t.api);
    const { socket } = await connectReady(t.server.url, team.b.jwt);
    try {
      const seen: Payload[] = [];
      socket.on('lease:updated', (e: Payload) => { if (e.state === 'expired') seen.push(e); });
      const lease = (await acquire(team, team.a, { resource: 'tmp/', ttlSeconds: 1 })).body;
      const end = new Date(lease.expiresAt).getTime();
      await waitUntil('the expiry is announced', () => seen.length > 0, 10_000, 50);
      expect(Date.now()).toBeLessThan(end + 2000);
      expect(seen[0]!.lease.id).toBe(lease.id);
      expect((await acquire(team, team.b, { resource: 'tmp/x' })).status).toBe(201);
      expect((await t.api.post(`/api/v1/rooms/${team.roomId}/leases/${lease.id}/renew`, {}, { jwt: team.a.jwt })).status).toBe(404);
      // More sweeps (every node's, each half a second): still announced once.
      await waitToProveAbsence(1500);
      expect(seen).toHaveLength(1);
    } finally {
      socket.disconnect();
    }
  });
});
