import { describe, expect, it } from 'vitest';
import { newAdminAgentRoom, newAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitToProveAbsence } from '../helpers/wait.js';
import { useSockets, waitFor, type Payload } from '../helpers/ws.js';

// docs/protocol.md, Activity: typing and working, over REST and WebSocket, never stored.

describe('activity', () => {
  const t = useTestServer();
  const connect = useSockets(t);

  it('REST sets it for members only; the room hears activity:update and the members listing shows it; a message makes the sender idle', async () => {
    const { admin, agent, roomId } = await newAdminAgentRoom(t.api);
    const watcher = await connect(admin);
    const heard = waitFor<Payload>(watcher, 'activity:update', (u) => u.agentId === agent.id);
    const set = await t.api.post(`/api/v1/rooms/${roomId}/activity`, { state: 'working', text: 'reading the logs' }, { jwt: agent.jwt });
    expect(set.status).toBe(204);
    const update = await heard;
    expect(update).toMatchObject({ roomId, agentId: agent.id, state: 'working', text: 'reading the logs' });
    expect(Date.parse(update.expiresAt) - Date.now()).toBeGreaterThan(100_000);

    const members = await t.api.get(`/api/v1/rooms/${roomId}/members`, { jwt: admin.jwt });
    expect(members.body.members.find((m: Payload) => m.agentId === agent.id).activity).toEqual({ state: 'working', text: 'reading the logs', expiresAt: update.expiresAt });
    expect(members.body.members.find((m: Payload) => m.agentId === admin.id).activity).toBeNull();

    const outsider = await newAgent(t.api);
    const refused = await t.api.post(`/api/v1/rooms/${roomId}/activity`, { state: 'typing' }, { jwt: outsider.jwt });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/member/);
    const bad = await t.api.post(`/api/v1/rooms/${roomId}/activity`, { state: 'typing', text: 'x'.repeat(81) }, { jwt: agent.jwt });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('"text"');
    expect((await t.api.post('/api/v1/rooms/00000000-0000-4000-8000-000000000000/activity', { state: 'idle' }, { jwt: agent.jwt })).status).toBe(404);

    const idle = waitFor<Payload>(watcher, 'activity:update', (u) => u.agentId === agent.id && u.state === 'idle');
    expect((await t.api.post(`/api/v1/rooms/${roomId}/messages`, { body: 'done' }, { jwt: agent.jwt })).status).toBe(201);
    expect(await idle).toEqual({ roomId, agentId: agent.id, state: 'idle', text: '', expiresAt: null });
    const after = await t.api.get(`/api/v1/rooms/${roomId}/members`, { jwt: admin.jwt });
    expect(after.body.members.find((m: Payload) => m.agentId === agent.id).activity).toBeNull();
  });

  it('activity:set is acknowledged; a storm of 50 in a second costs the room one update now and the latest one a second later', async () => {
    const { admin, agent, roomId } = await newAdminAgentRoom(t.api);
    const watcher = await connect(admin);
    const setter = await connect(agent);
    const seen: Payload[] = [];
    watcher.on('activity:update', (u: Payload) => { if (u.agentId === agent.id) seen.push(u); });
    const ack = await setter.emitWithAck('activity:set', { roomId, state: 'typing' });
    expect(ack).toEqual({ ok: true });
    expect((await setter.emitWithAck('activity:set', { roomId, state: 'sleeping' })).error.code).toBe('VALIDATION_ERROR');
    // The rest of the storm: what the WebSocket rate limit lets through is held, only its latest sent.
    const acks = await Promise.all(Array.from({ length: 48 }, (_, i) => setter.emitWithAck('activity:set', { roomId, state: 'working', text: `step ${i}` })));
    const accepted = acks.flatMap((a: Payload, i) => (a.ok === true ? [`working step ${i}`] : []));
    for (const a of acks) if (a.ok !== true) expect(a.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(accepted.length).toBeGreaterThan(0);
    await waitToProveAbsence(1500);
    expect(seen.map((u) => `${u.state} ${u.text}`)).toEqual(['typing ', accepted.at(-1)]);
  });

  it('idle when the agent\'s last socket goes', async () => {
    const { admin, agent, roomId } = await newAdminAgentRoom(t.api);
    const watcher = await connect(admin);
    const setter = await connect(agent);
    expect(await setter.emitWithAck('activity:set', { roomId, state: 'typing' })).toEqual({ ok: true });
    const idle = waitFor<Payload>(watcher, 'activity:update', (u) => u.agentId === agent.id && u.state === 'idle');
    setter.disconnect();
    expect(await idle).toMatchObject({ state: 'idle', expiresAt: null });
  });
});
