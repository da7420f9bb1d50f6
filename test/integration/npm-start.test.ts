import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, startServerProcess, TEST_JWT_SECRET, type StartedServer, type TestDatabase } from '../helpers/server.js';

/** Whether something accepts TCP connections on the port of `url`. */
const accepts = (url: string): Promise<boolean> => new Promise((resolve) => {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.once('connect', () => {
    socket.destroy();
    resolve(true);
  });
  socket.once('error', () => resolve(false));
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * `npm start` under a process manager: the SIGTERM it sends to the npm process must reach the server
 * (the start script ends in `exec node dist/main.js`), so the graceful shutdown runs and the port
 * closes (docs/deployment.md, Draining).
 */
describe('npm start', { timeout: 120_000 }, () => {
  let db: TestDatabase | undefined;
  let running: StartedServer | undefined;
  let home: string | undefined;
  /** The server's own pid: were the signal lost, it would outlive npm, and must not outlive the test. */
  let serverPid: number | undefined;
  afterEach(async () => {
    if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
    serverPid = undefined;
    await running?.kill();
    running = undefined;
    await db?.drop();
    db = undefined;
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
    home = undefined;
  });

  it('SIGTERM to the npm process shuts the server down gracefully and closes its port', async () => {
    db = await createTestDatabase();
    home = mkdtempSync(join(tmpdir(), 'ams-npm-home-'));
    // --ignore-scripts skips only the prestart build (npm still runs the start script itself):
    // ensureBuilt (in startServerProcess) has built dist/ already.
    running = await startServerProcess(
      { DATABASE_URL: db.url, JWT_SECRET: TEST_JWT_SECRET, HOME: home, npm_config_update_notifier: 'false' },
      { name: 'npm start', argv: ['npm', 'start', '--ignore-scripts'] },
    );
    const listening = await running.waitForLog((l) => l.msg === 'agent messaging service listening');
    serverPid = listening.pid as number;
    // The server is npm's child (the shell replaced itself with it), not npm itself.
    expect(serverPid).not.toBe(running.pid);
    expect(await accepts(running.url)).toBe(true);

    running.child.kill('SIGTERM');
    const stopping = await running.waitForLog((l) => l.msg === 'shutting down', 20_000);
    expect(stopping).toMatchObject({ signal: 'SIGTERM', pid: serverPid });
    const exit = await running.exit;
    // The server's own graceful exit (0), which npm passes on.
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.stdout).not.toContain('shutdown took longer');
    expect(alive(serverPid)).toBe(false);
    expect(await accepts(running.url)).toBe(false);
  });
});
