import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { createTestDatabase, startTestServer, TEST_DIALECT, type TestDatabase, type TestServer } from '../helpers/server.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitToProveAbsence, waitUntil } from '../helpers/wait.js';
import type { Payload } from '../helpers/ws.js';

// docs/tasks.md, "Leases running out": a claim's lease that runs out while the database is paused
// is applied once it is back, once. On PostgreSQL the server reaches it through a TCP proxy that
// holds every byte (the database looks frozen); on SQLite another connection holds the write lock.

describe('a lease running out while the database is paused', () => {
  let database: TestDatabase;
  let proxy: TcpProxy | undefined;
  let server: TestServer;
  let api: Api;
  let requester: TestAgent;
  let worker: TestAgent;
  let queueId: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    let url = database.url;
    if (TEST_DIALECT === 'postgres') {
      const target = new URL(database.url);
      proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
      const proxied = new URL(database.url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      url = proxied.toString();
    }
    server = await startTestServer({ db: { url, drop: () => Promise.resolve() }, config: { testMinLeaseSeconds: 1 } });
    api = new Api(server.url);
    const admin = await newAdmin(api);
    [requester, worker] = [await newAgent(api), await newAgent(api)];
    queueId = (await newRoom(api, admin, [requester, worker])).id;
  }, 60_000);
  afterAll(async () => {
    proxy?.resume();
    await server?.close();
    await proxy?.close();
    await database?.drop();
  });

  /** Pauses the database's writes (SQLite) or the whole database (PostgreSQL); returns the resume. */
  const pause = (): (() => void) => {
    if (proxy !== undefined) {
      proxy.pause();
      return () => proxy!.resume();
    }
    const holder = new Database(database.url.slice('sqlite:'.length));
    holder.exec('begin immediate');
    return () => {
      holder.exec('rollback');
      holder.close();
    };
  };

  it('applies the expiry once when the database is back', async () => {
    const task = (await api.post('/api/v1/tasks', { queue: queueId, title: 'Paused' }, { jwt: requester.jwt })).body;
    const claimed = await api.post(`/api/v1/tasks/${task.id}/claim`, { leaseSeconds: 1 }, { jwt: worker.jwt });
    expect(claimed.status).toBe(200);
    const resume = pause();
    // Past the lease, and past several sweeps that cannot write.
    await waitToProveAbsence(4000);
    resume();
    await waitUntil('the task is back in the queue', async () => (await api.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body.assigneeId === null, 30_000, 200);
    // A few more sweeps: still once.
    await waitToProveAbsence(2500);
    const back = (await api.get(`/api/v1/tasks/${task.id}`, { jwt: requester.jwt })).body;
    expect(back).toMatchObject({ state: 'submitted', assigneeId: null, attempts: 1 });
    expect(back.history.filter((h: Payload) => h.reason === 'lease-expired')).toHaveLength(1);
    const messages = (await api.get(`/api/v1/rooms/${queueId}/messages`, { jwt: requester.jwt })).body.messages as Payload[];
    expect(messages.filter((m) => m.task?.id === task.id)).toHaveLength(back.history.length);
  }, 60_000);
});
