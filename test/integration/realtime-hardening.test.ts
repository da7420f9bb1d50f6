import { beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { testConfig } from '../helpers/config.js';
import { WS_AGENT_EVENTS_CONNECTIONS } from '../../src/limits/rate-limits.js';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';
import { connectReady, emitWithAck, record, roundTrip, type ClientSocket, type Payload } from '../helpers/ws.js';
import { rawAgentSocket } from '../helpers/raw-ws.js';
import { waitToProveAbsence } from '../helpers/wait.js';
import { PRESENCE_WINDOW_MS } from '../../src/realtime/presence/room-subscriptions.js';

// Hardening of the WebSocket side (docs/reliability.md, The WebSocket side).

const wsConfig = (overrides: Partial<Config['ws']>): Config['ws'] => ({ ...testConfig().ws, ...overrides });

describe('presence amplification', () => {
  const { server, api } = useTestServer({ config: { ws: wsConfig({ eventsPerSecond: 1000, abuseEventsPerSecond: 100_000, maxConnectionsPerAgent: 20 }) } });
  let admin: TestAgent;
  let talker: TestAgent;
  let listener: TestAgent;
  let room: TestRoom;

  beforeAll(async () => {
    // Limits high enough that every room:join below is admitted: only the announcement rule bounds it.
    admin = await newAdmin(api);
    talker = await newAgent(api);
    listener = await newAgent(api);
    room = await newRoom(api, admin, [talker, listener]);
  });

  it('five sockets of one agent repeating room:join 100 times make no presence:update beyond the first online', async () => {
    const { socket: watcher } = await connectReady(server.url, listener.jwt);
    const seen = record(watcher, 'presence:update');
    const sockets: ClientSocket[] = [];
    for (let i = 0; i < 5; i++) sockets.push((await connectReady(server.url, talker.jwt)).socket);
    try {
      const acks = await Promise.all(sockets.flatMap((s) => Array.from({ length: 100 }, () => emitWithAck(s, 'room:join', { roomId: room.id }))));
      expect(acks.every((ack: Payload) => ack.ok === true)).toBe(true);
      await roundTrip(watcher);
      await waitToProveAbsence(2 * PRESENCE_WINDOW_MS); // anything in the room's burst window has come too
      // The first socket's connect announced online; nothing the joins did is announced.
      expect(seen.filter((p) => p.agentId === talker.id)).toEqual([{ agentId: talker.id, status: 'online' }]);
    } finally {
      for (const s of sockets) s.disconnect();
      watcher.disconnect();
    }
  });
});

describe('the per-agent event budget', () => {
  const perConnection = 10;
  const { server, api } = useTestServer({ config: { ws: wsConfig({ eventsPerSecond: perConnection, maxConnectionsPerAgent: 20 }) } });
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await newAgent(api);
  });

  it('bounds the events of all sockets of one agent together, though none is over its own rate', async () => {
    const connections = WS_AGENT_EVENTS_CONNECTIONS + 4;
    const sockets: ClientSocket[] = [];
    for (let i = 0; i < connections; i++) sockets.push((await connectReady(server.url, agent.jwt)).socket);
    try {
      // Each socket sends exactly its per-connection allowance at once.
      const acks = await Promise.all(sockets.flatMap((s) => Array.from({ length: perConnection }, () => emitWithAck(s, 'room:list', {}))));
      const served = acks.filter((ack: Payload) => ack.rooms !== undefined).length;
      const refused = acks.filter((ack: Payload) => ack.error?.code === 'RATE_LIMIT_EXCEEDED').length;
      expect(served + refused).toBe(connections * perConnection);
      // The agent's budget is WS_AGENT_EVENTS_CONNECTIONS connections' worth (twice that across a window boundary).
      expect(served).toBeLessThanOrEqual(2 * WS_AGENT_EVENTS_CONNECTIONS * perConnection);
      expect(refused).toBeGreaterThan(0);
    } finally {
      for (const s of sockets) s.disconnect();
    }
  });
});

describe('acknowledgement ids', () => {
  const t = useTestServer();
  let agent: TestAgent;

  beforeAll(async () => {
    agent = await newAgent(t.api);
  });

  it('answers an id up to 2^53 - 1 with that id', async () => {
    const raw = await rawAgentSocket(t.server.url, agent.jwt);
    try {
      raw.send(`42/agents,${Number.MAX_SAFE_INTEGER}["room:list",{}]`);
      const answer = await raw.next((t) => t.startsWith('43/agents,'));
      expect(answer.startsWith(`43/agents,${Number.MAX_SAFE_INTEGER}[`)).toBe(true);
    } finally {
      raw.destroy();
    }
  });

  it('refuses a packet whose id is beyond 2^53 (it could only be answered in a form clients cannot parse): the connection is closed', async () => {
    const raw = await rawAgentSocket(t.server.url, agent.jwt);
    try {
      raw.send('42/agents,1234567890123456789012345["room:list",{}]');
      await expect(raw.next((t) => t.startsWith('43/agents,'), 3000)).rejects.toThrow('connection closed');
      expect(raw.closed).toBe(true);
    } finally {
      raw.destroy();
    }
  });
});
