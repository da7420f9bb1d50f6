import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent } from '../helpers/api.js';
import { ensureBuilt } from '../helpers/build.js';
import { runAms, type CliResult } from '../helpers/cli.js';
import { useTestServer } from '../helpers/suite.js';

// `ams task enqueue`, `ams claim`, `ams task claim`, `ams task heartbeat`, `ams tasks --queue`
// (docs/tasks.md, Queues; docs/client.md): the built CLI against a running server.

describe('ams queue commands', { timeout: 120_000 }, () => {
  const t = useTestServer();
  let requester: TestAgent;
  let worker: TestAgent;
  let other: TestAgent;
  let slug: string;
  beforeAll(async () => {
    await ensureBuilt();
    const admin = await newAdmin(t.api);
    [requester, worker, other] = [await newAgent(t.api), await newAgent(t.api), await newAgent(t.api)];
    slug = (await newRoom(t.api, admin, [requester, worker, other])).slug;
  }, 180_000);

  const ams = (token: string, ...args: string[]): Promise<CliResult> => runAms({ AMS_URL: t.server.url, AMS_API_TOKEN: token }, ...args);

  it('enqueues, claims the oldest, renews, and says when there is none', async () => {
    const enqueued = await ams(requester.apiToken, 'task', 'enqueue', slug, 'Rebuild', 'the', 'index', '--max-attempts', '2', '--json');
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const task = JSON.parse(enqueued.stdout) as { id: string; queueId: string; maxAttempts: number };
    expect(task.maxAttempts).toBe(2);

    const listed = await ams(worker.apiToken, 'tasks', '--queue', slug);
    expect(listed.stdout).toContain(task.id);
    const claimed = await ams(worker.apiToken, 'claim', slug, '--lease', '60');
    expect(claimed).toMatchObject({ code: 0, stderr: '' });
    expect(claimed.stdout).toMatch(new RegExp(`^task ${task.id} submitted "Rebuild the index" claim 1, lease until \\S+\\n$`));
    expect(await ams(other.apiToken, 'claim', slug)).toEqual({ code: 3, stdout: 'no task to claim\n', stderr: '' });
    const taken = await ams(other.apiToken, 'task', 'claim', task.id);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(worker.id);
    expect((await ams(worker.apiToken, 'task', 'heartbeat', task.id, '--lease', '120')).code).toBe(0);
    expect((await ams(other.apiToken, 'task', 'heartbeat', task.id)).code).toBe(1);
    const badLease = await ams(worker.apiToken, 'task', 'heartbeat', task.id, '--lease', '5');
    expect(badLease).toMatchObject({ code: 1, stderr: expect.stringContaining('--lease') });
  });

  it('ams lease: take, list, refuse with the holder named, renew, release', async () => {
    const taken = await ams(worker.apiToken, 'lease', slug, 'src/', '--ttl', '600', '--reason', 'refactor', '--json');
    expect(taken.code, taken.stderr).toBe(0);
    const lease = JSON.parse(taken.stdout) as { id: string; resource: string; fence: number };
    expect(lease).toMatchObject({ resource: 'src/', fence: 1 });
    const refused = await ams(other.apiToken, 'lease', slug, 'src/app.ts');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`src/ (${worker.id} until`);
    expect(await ams(other.apiToken, 'lease', slug, 'a/../b')).toMatchObject({ code: 1, stderr: expect.stringContaining('RESOURCE') });
    expect((await ams(other.apiToken, 'lease', 'list', slug)).stdout).toContain(lease.id);
    expect((await ams(worker.apiToken, 'lease', 'renew', slug, lease.id, '--ttl', '900')).code).toBe(0);
    expect((await ams(other.apiToken, 'lease', 'release', slug, lease.id)).code).toBe(1);
    expect(await ams(worker.apiToken, 'lease', 'release', slug, lease.id)).toEqual({ code: 0, stdout: `released ${lease.id}\n`, stderr: '' });
    expect((await ams(other.apiToken, 'lease', slug, 'src/app.ts', '--shared')).code).toBe(0);
  });
});
