import { beforeAll, describe, expect, it } from 'vitest';
import { type ActivityUpdate } from '@agent-messaging/client';
import { newAdminPairRoom, newAgent, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useClients } from '../helpers/clients.js';
import { ensureBuilt } from '../helpers/build.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';

// docs/client.md, Activity: setActivity and the activityUpdate event, and `ams activity`.

describe('activity in the client library and ams', { timeout: 120_000 }, () => {
  const t = useTestServer();
  const { client, ams } = useClients(t);
  let alice: TestAgent;
  let bob: TestAgent;
  let room: TestRoom;
  beforeAll(async () => {
    await ensureBuilt();
    ({ alice, bob, room } = await newAdminPairRoom(t.api));
  }, 180_000);

  it('setActivity over the WebSocket reaches the other member as activityUpdate; idle when the setter closes; errors are AmsErrors', async () => {
    const a = client(alice);
    const b = client(bob);
    await Promise.all([a.connect(), b.connect()]);
    const heard: ActivityUpdate[] = [];
    b.on('activityUpdate', (u) => {
      if (u.agentId === alice.id) heard.push(u);
    });
    await a.setActivity(room.id, 'working', 'reading the logs');
    await waitUntil('the working update', () => heard.length === 1);
    expect(heard[0]).toEqual({ roomId: room.id, agentId: alice.id, state: 'working', text: 'reading the logs', expiresAt: expect.any(String) });
    expect(Date.parse(heard[0]!.expiresAt!) - Date.now()).toBeGreaterThan(100_000);
    const listed = (await b.members(room.id)).find((m) => m.agentId === alice.id);
    expect(listed?.activity).toEqual({ state: 'working', text: 'reading the logs', expiresAt: heard[0]!.expiresAt });

    await expect(a.setActivity(room.id, 'sleeping' as 'idle')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    const outsider = client(await newAgent(t.api));
    await outsider.connect();
    await expect(outsider.setActivity(room.id, 'typing')).rejects.toMatchObject({ code: 'FORBIDDEN' });

    // The setter's last socket goes: the room hears idle (no text, no expiry).
    await a.close();
    await waitUntil('the idle update', () => heard.length === 2);
    expect(heard[1]).toEqual({ roomId: room.id, agentId: alice.id, state: 'idle', text: '', expiresAt: null });
  });

  it('without a connection setActivity goes over REST and the state lasts; errors keep their codes', async () => {
    const b = client(bob);
    await b.connect();
    const heard: ActivityUpdate[] = [];
    b.on('activityUpdate', (u) => heard.push(u));
    const offline = client(alice);
    await offline.setActivity(room.id, 'typing');
    await waitUntil('the typing update', () => heard.some((u) => u.agentId === alice.id && u.state === 'typing'));
    expect(heard.find((u) => u.state === 'typing')).toMatchObject({ roomId: room.id, text: '', expiresAt: expect.any(String) });
    const outsider = client(await newAgent(t.api));
    await expect(outsider.setActivity(room.id, 'typing')).rejects.toMatchObject({ code: 'FORBIDDEN', status: 403 });
    await expect(offline.setActivity(room.id, 'working', 'x'.repeat(81))).rejects.toMatchObject({ code: 'VALIDATION_ERROR', status: 400 });
  });

  it('ams activity ROOM STATE [--text]', async () => {
    expect(await ams(alice.apiToken, 'activity', room.slug, 'working', '--text', 'compiling')).toEqual({ code: 0, stdout: `working in ${room.slug}\n`, stderr: '' });
    // Within a second of the previous test's update it is held (one a second): the listing shows it once sent.
    const shown = async (): Promise<unknown> =>
      (await t.api.get(`/api/v1/rooms/${room.id}/members`, { jwt: bob.jwt })).body.members.find((m: { agentId: string }) => m.agentId === alice.id).activity;
    await waitUntil('the working activity listed', async () => ((await shown()) as { text?: string } | null)?.text === 'compiling', 5_000);
    expect(await shown()).toMatchObject({ state: 'working', text: 'compiling' });
    expect(await ams(alice.apiToken, 'activity', room.id, 'idle')).toEqual({ code: 0, stdout: `idle in ${room.slug}\n`, stderr: '' });
    expect(await ams(alice.apiToken, 'activity', room.slug, 'sleeping')).toEqual({ code: 2, stdout: '', stderr: 'ams: STATE must be typing, working or idle (ams --help for usage)\n' });
    const long = await ams(alice.apiToken, 'activity', room.slug, 'working', '--text', 'x'.repeat(81));
    expect(long.code).toBe(1);
    expect(long.stderr).toContain('--text');
    const outsider = await newAgent(t.api);
    expect((await ams(outsider.apiToken, 'activity', room.slug, 'typing')).code).not.toBe(0);
  });
});
