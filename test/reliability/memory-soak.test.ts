import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../helpers/build.js';

/**
 * After bursts of WebSocket connections that all close, the server holds none of
 * their objects. bench/soak.js (the documented soak) runs short here: churn, then rounds of
 * connections opened together and closed, with V8 heap snapshots at baseline and at the end
 * compared by constructor (sockets, clients, WebSockets, timers), the event loop's active handles,
 * Socket.IO rooms and the post-GC heap. Its exit code is its verdict.
 */
const run = promisify(execFile);

describe('memory after connection bursts', () => {
  let dir: string;
  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'ams-memory-soak-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('returns every per-connection object, timer and socket to its baseline', async () => {
    const out = join(dir, 'soak.json');
    const args = ['bench/soak.js', '--minutes', '0.1', '--clients', '20', '--agents', '10', '--burst', '400', '--burst-rounds', '2', '--snapshots', '--out', out];
    await run(process.execPath, args, { cwd: ROOT, timeout: 150_000 }).catch((err: { stdout?: string; stderr?: string }) => {
      throw new Error(`soak failed:\n${err.stdout ?? ''}\n${err.stderr ?? ''}`);
    });
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      stats: { burstConnections: number; failures: number };
      verdict: { ok: boolean; checks: Record<string, boolean>; retainedObjects: Record<string, { baseline: number; final: number }> };
    };
    expect(report.verdict.checks).toMatchObject({ retainedObjects: true, activeResources: true, rooms: true, sockets: true, heap: true });
    // No kind of per-connection object grew by anything near one per connection (800 were made).
    for (const [name, count] of Object.entries(report.verdict.retainedObjects)) expect(count.final - count.baseline, name).toBeLessThanOrEqual(10);
    expect(report.stats.burstConnections).toBe(800);
    expect(report.stats.failures).toBe(0);
    // The comparison saw the server's own objects (a snapshot that missed them would pass vacuously).
    expect(report.verdict.retainedObjects.WebSocketServer!.baseline).toBeGreaterThan(0);
  }, 180_000);
});
