import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/build.js';
import { Api, newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { startServerProcess, type StartedServer } from '../helpers/server.js';
import { sleep } from '../helpers/wait.js';

/**
 * Crash safety: a client sends with clientMsgId while the real server process is killed with
 * SIGKILL at random moments and restarted on the same SQLite file. An acknowledged message must
 * never be lost or duplicated; an unacknowledged one is stored at most once; retries return the
 * original. CI runs a few rounds; AMS_LONG=1 runs 100 (AMS_CRASH_ROUNDS sets any number).
 */
const LONG = process.env.AMS_LONG === '1';
const ROUNDS = Number(process.env.AMS_CRASH_ROUNDS ?? (LONG ? 100 : 5));
const SENDERS = 4;

type Outcome = 'ok' | 'failed' | 'unknown';
interface Sent {
  clientMsgId: string;
  body: string;
  outcome: Outcome;
  /** The message id the server acknowledged, once it has. */
  id?: string;
  status?: number;
}

describe('crash loop: SIGKILL at random moments while sending', () => {
  let dir: string;
  let env: Record<string, string>;
  let child: StartedServer | undefined;

  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'ams-crash-'));
    env = {
      DATABASE_URL: `sqlite:${join(dir, 'ams.sqlite')}`,
      RATE_LIMIT_ANON_PER_MINUTE: '10000000',
      RATE_LIMIT_AGENT_PER_MINUTE: '10000000',
      JWT_TTL_SECONDS: '86400',
    };
  });
  afterAll(async () => {
    await child?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`loses no acknowledged message and stores none twice over ${ROUNDS} SIGKILL rounds`, { timeout: 30_000 + ROUNDS * 10_000 }, async () => {
    child = await startServerProcess(env);
    let api = new Api(child.url);
    const admin: TestAgent = await newAdmin(api);
    const sender: TestAgent = await newAgent(api);
    const room: TestRoom = await newRoom(api, admin, [sender]);
    await child.kill();

    const sent: Sent[] = [];
    const violations: string[] = [];
    let next = 0;

    const post = (base: string, record: Sent): Promise<Response> =>
      fetch(`${base}/api/v1/rooms/${room.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sender.jwt}`, 'content-type': 'application/json' },
        body: JSON.stringify({ body: record.body, clientMsgId: record.clientMsgId }),
        signal: AbortSignal.timeout(10_000),
      });

    /** Sends until the server is gone; records what the client could know about each send. */
    const sendLoop = async (base: string, killed: { value: boolean }): Promise<void> => {
      while (!killed.value) {
        // Mostly new messages; sometimes a retry of an earlier one, as a real client would do.
        const earlier = sent.filter((s) => s.outcome !== 'failed');
        let record: Sent;
        if (earlier.length > 0 && Math.random() < 0.2) {
          record = earlier[Math.floor(Math.random() * earlier.length)]!;
        } else {
          const n = next++;
          record = { clientMsgId: `m-${n}`, body: `message ${n}`, outcome: 'unknown' };
          sent.push(record);
        }
        // Whether this request is a retry of an acknowledged message (sent after the acknowledgement
        // came back). A retry sent while the original is still in flight may be the one of the two
        // that is created (201), and its answer may be read after the other's 200.
        const acknowledgedBefore = record.outcome === 'ok';
        try {
          const res = await post(base, record);
          const body = (await res.json()) as { id?: string };
          if (res.status === 200 || res.status === 201) {
            if (record.id !== undefined && body.id !== record.id) violations.push(`${record.clientMsgId}: retry returned ${body.id}, was ${record.id}`);
            if (acknowledgedBefore && res.status !== 200) violations.push(`${record.clientMsgId}: acknowledged before, created again`);
            record.outcome = 'ok';
            record.id = body.id!;
          } else if (record.outcome === 'unknown' && record.status === undefined) {
            record.outcome = 'failed';
            record.status = res.status;
          }
        } catch {
          // Connection refused or reset: the client cannot know whether the server committed.
          if (!killed.value) await sleep(5);
        }
      }
    };

    for (let round = 0; round < ROUNDS; round++) {
      child = await startServerProcess(env);
      const killed = { value: false };
      const loops = Array.from({ length: SENDERS }, () => sendLoop(child!.url, killed));
      await sleep(50 + Math.random() * 550); // a random moment, mostly mid-request
      await child.kill();
      killed.value = true;
      await Promise.all(loops);
    }

    // Everything the server holds after the last crash.
    child = await startServerProcess(env);
    api = new Api(child.url);
    const readAll = async (): Promise<{ id: string; body: string; clientMsgId?: string }[]> => {
      const all = [];
      let cursor: string | null = null;
      for (;;) {
        const page = await api.get(`/api/v1/rooms/${room.id}/messages?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { jwt: sender.jwt });
        expect(page.status).toBe(200);
        all.push(...page.body.messages);
        if (!page.body.hasMore) return all;
        cursor = page.body.nextCursor;
      }
    };
    const stored = await readAll();
    const byClientId = new Map<string, { id: string; body: string }[]>();
    for (const m of stored) byClientId.set(m.clientMsgId ?? '', [...(byClientId.get(m.clientMsgId ?? '') ?? []), m]);

    const counts = { ok: 0, unknown: 0, failed: 0, unknownStored: 0 };
    for (const record of sent) {
      counts[record.outcome]++;
      const copies = byClientId.get(record.clientMsgId) ?? [];
      if (copies.length > 1) violations.push(`${record.clientMsgId}: stored ${copies.length} times`);
      if (record.outcome === 'ok' && (copies.length !== 1 || copies[0]!.id !== record.id)) violations.push(`${record.clientMsgId}: acknowledged as ${record.id} but history has ${JSON.stringify(copies)}`);
      if (record.outcome === 'failed' && copies.length !== 0) violations.push(`${record.clientMsgId}: refused with ${record.status} but stored`);
      if (record.outcome === 'unknown' && copies.length === 1) counts.unknownStored++;
      for (const copy of copies) if (copy.body !== record.body) violations.push(`${record.clientMsgId}: body ${copy.body}`);
    }
    const known = new Set(sent.map((s) => s.clientMsgId));
    for (const m of stored) if (!known.has(m.clientMsgId ?? '')) violations.push(`phantom message ${m.id}`);
    expect(violations).toEqual([]);
    expect(counts.failed).toBe(0); // a SIGKILL never produces an error response, only lost connections
    expect(counts.ok).toBeGreaterThan(0);

    // Retrying every send with its clientMsgId returns the original where there is one.
    for (const record of sent) {
      const res = await post(child.url, record);
      const body = (await res.json()) as { id: string };
      const copy = byClientId.get(record.clientMsgId)?.[0];
      if (copy) {
        expect(res.status, record.clientMsgId).toBe(200);
        expect(body.id).toBe(copy.id);
      } else {
        expect(res.status, record.clientMsgId).toBe(201);
      }
    }
    const final = await readAll();
    expect(final).toHaveLength(sent.length);
    expect(new Set(final.map((m) => m.clientMsgId)).size).toBe(sent.length);

    // A graceful stop, then SQLite's own consistency check of the file.
    expect(await child.kill('SIGTERM')).toMatchObject({ code: 0, signal: null });
    const file = new SQLite(join(dir, 'ams.sqlite'), { readonly: true });
    try {
      expect(file.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      file.close();
    }
    process.stdout.write(`crash loop: ${ROUNDS} rounds, ${sent.length} sends: ${counts.ok} acknowledged, ${counts.unknown} unknown (${counts.unknownStored} of them stored once), ${counts.failed} refused\n`);
  });
});
