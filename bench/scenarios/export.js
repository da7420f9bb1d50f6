import { join } from 'node:path';
import { TextDecoder } from 'node:util';
import Database from 'better-sqlite3';
import { v7 as uuidv7 } from 'uuid';
import { startService } from '../lib/service.js';

/** History page size the export is compared with: the largest a client may ask for. */
const PAGE = 100;

/**
 * Writes `total` messages into one room straight into the service's SQLite file (one transaction),
 * numbered 1..total as the send path would, and moves the room's `last_seq` to match (as the
 * catch-up scenario seeds; the search index is not filled: nothing here searches).
 */
function seed(dbPath, { total, roomId, senders }) {
  const db = new Database(dbPath);
  try {
    db.pragma('journal_mode = WAL');
    const insert = db.prepare('insert into messages (id, room_id, sender_id, body, created_at, seq) values (?, ?, ?, ?, ?, ?)');
    const start = Date.now() - total * 10;
    db.transaction(() => {
      for (let seq = 1; seq <= total; seq++) {
        const msecs = start + seq * 10;
        insert.run(uuidv7({ msecs }), roomId, senders[seq % senders.length], `exported message ${seq} `.padEnd(140, 'x'), new Date(msecs).toISOString(), seq);
      }
      db.prepare('update rooms set last_seq = ? where id = ?').run(total, roomId);
    })();
  } finally {
    db.close();
  }
}

/** Runs `work` while sampling the process's RSS every 20 ms: its result, the seconds it took and the RSS growth at its peak. */
async function measured(proc, work) {
  const before = proc.rss();
  let peak = before;
  const timer = setInterval(() => { peak = Math.max(peak, proc.rss() ?? 0); }, 20);
  const t0 = performance.now();
  try {
    const result = await work();
    const seconds = (performance.now() - t0) / 1000;
    return { ...result, seconds: Math.round(seconds * 1000) / 1000, rssGrowthMiB: before === null ? null : Math.round(((peak - before) / 1048576) * 10) / 10 };
  } finally {
    clearInterval(timer);
  }
}

/**
 * Scenario 27: a room of 100,000 messages (5,000 with --quick) read whole, once as one streamed
 * NDJSON export (`GET /api/v1/rooms/:id/export`) and once as catch-up pages of 100
 * (`?afterSeq=`): messages per second of each and the service's RSS growth at the peak of each. The
 * export must hold every message once, in order, and grow the RSS by a bounded amount whatever the
 * room's size (docs/retention.md, Export).
 */
export async function exportScenario(bench) {
  const { quick, tmp, log } = bench;
  const dbPath = join(tmp, 'export.sqlite');
  const total = quick ? 5_000 : 100_000;
  let service = await startService({ name: 'service-export-setup', databaseUrl: `sqlite:${dbPath}`, jwtSecret: bench.jwtSecret });
  let admin;
  let member;
  let room;
  try {
    admin = await service.api.createAgent('admin');
    member = await service.api.createAgent('agent');
    room = await service.api.createRoom(admin.id, [member.id]);
  } finally {
    await service.proc.stop();
  }
  seed(dbPath, { total, roomId: room.id, senders: [admin.id, member.id] });
  log(`seeded ${total} messages`);
  service = await startService({ name: 'service-export', databaseUrl: `sqlite:${dbPath}`, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
  try {
    const issued = await service.api.issueToken(member.id);
    const jwt = (await service.api.exchange(issued.token)).token;
    const headers = { authorization: `Bearer ${jwt}` };

    const exported = await measured(service.proc, async () => {
      const res = await fetch(`${service.url}/api/v1/rooms/${room.id}/export`, { headers });
      if (res.status !== 200) throw new Error(`export: ${res.status} ${await res.text()}`);
      const decoder = new TextDecoder();
      let rest = '';
      let lines = 0;
      let last = 0;
      for await (const chunk of res.body) {
        rest += decoder.decode(chunk, { stream: true });
        let nl;
        while ((nl = rest.indexOf('\n')) !== -1) {
          const line = rest.slice(0, nl);
          rest = rest.slice(nl + 1);
          if (lines++ === 0) continue; // {room}
          const { seq } = JSON.parse(line);
          if (seq !== last + 1) throw new Error(`export: expected seq ${last + 1}, got ${seq}`);
          last = seq;
        }
      }
      if (last !== total) throw new Error(`export: ended at seq ${last} of ${total}`);
      return { messages: total };
    });
    exported.perSecond = Math.round(total / exported.seconds);
    log(`export   ${exported.perSecond} msg/s in ${exported.seconds} s, RSS +${exported.rssGrowthMiB} MiB`);

    const paged = await measured(service.proc, async () => {
      let last = 0;
      let pages = 0;
      for (;;) {
        const res = await fetch(`${service.url}/api/v1/rooms/${room.id}/messages?afterSeq=${last}&limit=${PAGE}`, { headers });
        if (res.status !== 200) throw new Error(`history: ${res.status} ${await res.text()}`);
        const page = await res.json();
        pages++;
        for (const m of page.messages) last = m.seq;
        if (!page.hasMore) break;
      }
      if (last !== total) throw new Error(`history: ended at seq ${last} of ${total}`);
      return { messages: total, pages };
    });
    paged.perSecond = Math.round(total / paged.seconds);
    log(`history  ${paged.perSecond} msg/s in ${paged.pages} pages, ${paged.seconds} s, RSS +${paged.rssGrowthMiB} MiB`);
    return { messages: total, pageSize: PAGE, export: exported, history: paged, ratio: exported.perSecond / paged.perSecond };
  } finally {
    await service.proc.stop();
  }
}
