import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionCapacity, readOpenFileLimit, RESERVED_DESCRIPTORS } from '../../src/realtime/connection/connection-capacity.js';
import { Api, newAgent } from '../helpers/api.js';
import { MAIN_JS } from '../helpers/build.js';
import { startServerProcess, type StartedServer } from '../helpers/server.js';
import { waitUntil } from '../helpers/wait.js';
import { connect, connectReady, disconnected, waitFor, type ClientSocket } from '../helpers/ws.js';

/**
 * The service knows how many connections its open-file limit allows (connection-capacity.ts): the
 * real server runs under `prlimit --nofile` with a small limit, is filled up, and must refuse the
 * next handshakes with a clear error, keep no descriptor of them, and go on serving.
 */
// Node needs about 300 descriptors while it loads the service's modules (it opens them concurrently); idle it holds 30.
const OPEN_FILES = 400;
const CAPACITY = OPEN_FILES - RESERVED_DESCRIPTORS;

describe('connection capacity from the open-file limit', () => {
  it('reads the soft limit of /proc/self/limits, and nothing where there is none', () => {
    const limits = [
      'Limit                     Soft Limit           Hard Limit           Units     ',
      'Max open files            20000                20000                files     ',
    ].join('\n');
    expect(readOpenFileLimit(limits)).toBe(20_000);
    expect(readOpenFileLimit(limits.replace('20000 ', 'unlimited'))).toBeNull();
    expect(readOpenFileLimit('')).toBeNull();
    expect(connectionCapacity(20_000)).toEqual({ openFileLimit: 20_000, maxConnections: 20_000 - RESERVED_DESCRIPTORS });
    expect(connectionCapacity(null)).toEqual({ openFileLimit: null, maxConnections: null });
    expect(connectionCapacity(10).maxConnections).toBe(0);
  });

  describe(`a server under prlimit --nofile=${OPEN_FILES}`, () => {
    let dir: string;
    let server: StartedServer;
    const sockets: ClientSocket[] = [];
    const openDescriptors = (): number => readdirSync(`/proc/${server.pid}/fd`).length;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ams-capacity-'));
      server = await startServerProcess(
        { DATABASE_URL: `sqlite:${join(dir, 'ams.sqlite')}`, WS_MAX_CONNECTIONS_PER_AGENT: '1000', RATE_LIMIT_ANON_PER_MINUTE: '100000', RATE_LIMIT_AGENT_PER_MINUTE: '100000' },
        { name: 'capacity', argv: ['prlimit', `--nofile=${OPEN_FILES}:${OPEN_FILES}`, process.execPath, MAIN_JS] },
      );
    }, 90_000);
    afterAll(async () => {
      for (const s of sockets) s.disconnect();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('logs the capacity at start (a warning: it is low) and exposes it as a metric', async () => {
      const line = await server.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('open-file limit allows only'));
      expect(line).toMatchObject({ level: 40, openFileLimit: OPEN_FILES, maxConnections: CAPACITY });
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toContain(`service_websocket_connection_capacity ${CAPACITY}`);
    });

    it('admits connections up to the capacity, refuses the next ones clearly, leaks no descriptor and keeps serving', { timeout: 120_000 }, async () => {
      const api = new Api(server.url);
      const agent = await newAgent(api);
      for (let i = 0; i < CAPACITY; i++) sockets.push((await connectReady(server.url, agent.jwt)).socket);
      const held = openDescriptors();

      for (let i = 0; i < 10; i++) {
        const socket = connect(server.url, agent.jwt);
        const hello = waitFor(socket, 'agent:hello-ack', () => true, 500).then(() => 'hello', () => 'no hello');
        const error = waitFor<{ code: string; message: string }>(socket, 'error');
        expect(await disconnected(socket)).toBe('transport close'); // a passing refusal: socket.io-client would retry
        expect(await error).toEqual({ code: 'UNAVAILABLE', message: expect.stringContaining(`maximum of ${CAPACITY} connections`) });
        expect(await hello).toBe('no hello');
      }
      // The refused sockets' descriptors are closed: back to what the admitted ones hold.
      await waitUntil('descriptors of refused handshakes closed', () => openDescriptors() <= held);
      expect(server.alive()).toBe(true);

      // Still serving: REST, and a handshake once an admitted socket has gone.
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toMatch(/service_websocket_connections_refused_total 10\b/);
      const leaving = sockets.pop()!;
      leaving.disconnect();
      let admitted: ClientSocket | undefined;
      await waitUntil('a handshake admitted again', async () => {
        try {
          admitted = (await connectReady(server.url, agent.jwt)).socket;
          return true;
        } catch {
          return false;
        }
      });
      sockets.push(admitted!);
    });
  });
});
