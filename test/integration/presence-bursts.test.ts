import { describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { waitUntil } from '../helpers/wait.js';
import { connectReady, emitWithAck, type Payload } from '../helpers/ws.js';

// presence:update is coalesced per room under bursts (realtime/presence/room-subscriptions.ts):
// nothing is lost or reordered, and a member's message never overtakes its `online`.
describe('presence in a burst of arrivals', () => {
  const t = useTestServer();

  it('every arrival is announced once, each before its own first message', async () => {
    const admin = await newAdmin(t.api);
    const watcher = await newAgent(t.api);
    const fleet = await Promise.all(Array.from({ length: 12 }, () => newAgent(t.api)));
    const room = await newRoom(t.api, admin, [watcher, ...fleet]);
    const { socket } = await connectReady(t.server.url, watcher.jwt);
    const seen: string[] = [];
    socket.on('presence:update', (p: Payload) => seen.push(`${p.status} ${p.agentId}`));
    socket.on('message:new', (m: Payload) => seen.push(`message ${m.authorAgentId}`));

    // All at once, each sending as soon as its hello-ack arrives.
    const members = await Promise.all(fleet.map(async (agent) => {
      const ready = await connectReady(t.server.url, agent.jwt);
      expect(await emitWithAck(ready.socket, 'message:send', { roomId: room.id, body: 'here' })).toEqual({ messageId: expect.any(String), seq: expect.any(Number) });
      return ready.socket;
    }));
    await waitUntil('every online and message', () => seen.length === 2 * fleet.length, 5000);
    for (const agent of fleet) {
      expect(seen.filter((s) => s === `online ${agent.id}`)).toHaveLength(1);
      expect(seen.indexOf(`online ${agent.id}`)).toBeLessThan(seen.indexOf(`message ${agent.id}`));
    }

    // And all leaving at once: each offline once.
    for (const s of members) s.disconnect();
    await waitUntil('every offline', () => seen.filter((s) => s.startsWith('offline')).length === fleet.length, 5000);
    for (const agent of fleet) expect(seen.filter((s) => s === `offline ${agent.id}`)).toHaveLength(1);
    socket.disconnect();
  });
});
