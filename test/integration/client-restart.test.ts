import { afterAll, describe, expect, it } from 'vitest';
import { AmsClient, type Message } from '@agent-messaging/client';
import { Api, newAdmin, newAgent, newRoom } from '../helpers/api.js';
import { createTestDatabase, startServerProcess, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from '../helpers/server.js';
import { freePort } from '../helpers/services.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';

// docs/client.md: the client library across a server killed with SIGKILL and started again
// (same database, same port) while messages are being sent.

describe('AmsClient across a SIGKILLed and restarted server', () => {
  let db: TestDatabase | undefined;
  let node: StartedServer | undefined;
  const clients: AmsClient[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await node?.kill('SIGKILL');
    await db?.drop();
  });

  it('delivers every message exactly once and in order, and a send issued while the server was down is stored once', { timeout: 120_000 }, async () => {
    db = await createTestDatabase();
    const port = await freePort();
    const start = (): Promise<StartedServer> => startServerProcess({
      PORT: String(port), DATABASE_URL: db!.url, JWT_SECRET: TEST_JWT_SECRET,
      RATE_LIMIT_ANON_PER_MINUTE: '100000', RATE_LIMIT_AGENT_PER_MINUTE: '100000',
    });
    node = await start();
    const url = `http://127.0.0.1:${port}`;
    const api = new Api(url);
    const admin = await newAdmin(api);
    const reader = await newAgent(api);
    const writer = await newAgent(api);
    const rooms = [await newRoom(api, admin, [reader, writer]), await newRoom(api, admin, [reader, writer])];

    const readerClient = new AmsClient({ url, apiToken: reader.apiToken });
    const writerClient = new AmsClient({ url, apiToken: writer.apiToken });
    clients.push(readerClient, writerClient);
    const delivered = new Map<string, Message[]>(rooms.map((r) => [r.id, []]));
    readerClient.on('message', (m) => delivered.get(m.roomId)!.push(m));
    await readerClient.connect();
    await writerClient.connect();

    const sent: Message[] = [];
    const pump = async (count: number): Promise<void> => {
      for (let i = 0; i < count; i++) sent.push(await writerClient.send(rooms[i % 2]!.id, `load ${i}`));
    };
    const sending = pump(60);
    await waitUntil('some sent before the kill', () => sent.length >= 10, 30_000);
    expect((await node.kill('SIGKILL')).signal).toBe('SIGKILL');

    // Issued while nothing listens on the port: it waits, and goes once the server is back.
    let downResolved = false;
    const whileDown = writerClient.send(rooms[0]!.id, 'sent while the server was down').then((m) => {
      downResolved = true;
      return m;
    });
    // Nothing listens: the send must still be pending after a few of the client's retries.
    await waitToProveAbsence(1_500);
    expect(downResolved).toBe(false);
    node = await start();
    sent.push(await whileDown);
    await sending;

    // What the server stored, in seq order: every send once.
    const stored = new Map<string, Message[]>();
    for (const room of rooms) {
      const page = (await api.get(`/api/v1/rooms/${room.id}/messages?afterSeq=0&limit=100`, { jwt: (await writerClient.createSession()).token })).body as { messages: Message[] };
      stored.set(room.id, page.messages);
    }
    const storedIds = [...stored.values()].flat().map((m) => m.id);
    expect(new Set(storedIds).size).toBe(storedIds.length);
    expect(storedIds.sort()).toEqual(sent.map((m) => m.id).sort());

    // The reader got exactly those, in seq order per room, with no gap and no repeat.
    await waitUntil('the reader caught up', () => rooms.every((r) => delivered.get(r.id)!.length >= stored.get(r.id)!.length), 30_000);
    await waitToProveAbsence(300); // a duplicate would arrive now
    for (const room of rooms) {
      expect(delivered.get(room.id)!.map((m) => m.id)).toEqual(stored.get(room.id)!.map((m) => m.id));
      expect(delivered.get(room.id)!.map((m) => m.seq)).toEqual(stored.get(room.id)!.map((_, i) => i + 1));
    }
    expect(readerClient.lastSeqs()).toEqual(Object.fromEntries(rooms.map((r) => [r.id, stored.get(r.id)!.length])));
  });
});
