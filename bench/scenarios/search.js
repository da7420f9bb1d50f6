import { join } from 'node:path';
import Database from 'better-sqlite3';
import { v7 as uuidv7 } from 'uuid';
import pg from 'pg';
import { alternate, cannon } from '../lib/http-load.js';
import { createDatabase } from '../lib/postgres.js';
import { jwtMinter, startService } from '../lib/service.js';

const ROOMS = 20;
const VOCABULARY = 2000;

/** A small deterministic PRNG (mulberry32): the same corpus on every run. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Pronounceable words, one per rank, a few with accents or capitals (folded by the index). */
function vocabulary(random) {
  const consonants = 'bcdfghjklmnprstvz';
  const vowels = ['a', 'e', 'i', 'o', 'u', 'é', 'ü'];
  const words = new Set();
  while (words.size < VOCABULARY) {
    const syllables = 2 + Math.floor(random() * 3);
    let w = '';
    for (let s = 0; s < syllables; s++) w += consonants[Math.floor(random() * consonants.length)] + vowels[Math.floor(random() * vowels.length)];
    words.add(random() < 0.05 ? w[0].toUpperCase() + w.slice(1) : w);
  }
  return [...words];
}

/** Zipf (s = 1) over the ranks: a few words are everywhere, most are rare, as in chat. */
function zipfSampler(random, n) {
  const cumulative = new Float64Array(n);
  let sum = 0;
  for (let r = 0; r < n; r++) cumulative[r] = sum += 1 / (r + 1);
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/**
 * The corpus: `total` messages spread over the rooms, sent by their members, each with the folded
 * words the service's send path would index; the same on every run and for both engines.
 */
async function* corpus({ total, rooms, senders }, batchSize = 5000) {
  // The service's own folding, from the build (imported here so that run.js can say when dist/ is missing).
  const { searchText } = await import('../../dist/core/search-text.js');
  const random = prng(42);
  const words = vocabulary(random);
  const rank = zipfSampler(random, words.length);
  const seqs = new Map();
  const start = Date.now() - total * 10;
  let batch = [];
  for (let i = 0; i < total; i++) {
    const length = 6 + Math.floor(random() * 15);
    const body = Array.from({ length }, () => words[rank()]).join(random() < 0.3 ? ', ' : ' ');
    const msecs = start + i * 10;
    const roomId = rooms[i % rooms.length];
    const seq = (seqs.get(roomId) ?? 0) + 1;
    seqs.set(roomId, seq);
    batch.push({ id: uuidv7({ msecs }), roomId, senderId: senders[i % senders.length], body, createdAt: new Date(msecs).toISOString(), seq, words: searchText(body) });
    if (batch.length === batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
  // Two words of the middle ranks: each in a few percent of the messages, together in a few
  // hundred (the posting lists of both are read and intersected on every search).
  return { query: `${words[20]} ${words[60]}`, prefixQuery: `${words[30].slice(0, 3)}*`, lastSeqs: seqs };
}

/** Drains the corpus generator through `write(batch)`; returns its queries and each room's last seq. */
async function writeCorpus(options, write) {
  const rows = corpus(options);
  for (;;) {
    const next = await rows.next();
    if (next.done) return next.value;
    await write(next.value);
  }
}

/** Writes the corpus straight into the service's SQLite file, message and index entry alike. */
export async function seed(dbPath, options) {
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  const insertMessage = db.prepare('insert into messages (id, room_id, sender_id, body, created_at, seq) values (?, ?, ?, ?, ?, ?)');
  const insertEntry = db.prepare('insert into message_search (message_id, words) values (?, ?)');
  const setLastSeq = db.prepare('update rooms set last_seq = ? where id = ?');
  try {
    const insertBatch = db.transaction((batch) => {
      for (const m of batch) {
        insertMessage.run(m.id, m.roomId, m.senderId, m.body, m.createdAt, m.seq);
        insertEntry.run(m.id, m.words);
      }
    });
    const result = await writeCorpus(options, (batch) => insertBatch(batch));
    db.transaction(() => {
      for (const [roomId, seq] of result.lastSeqs) setLastSeq.run(seq, roomId);
    })();
    return result;
  } finally {
    db.close();
  }
}

/** The same corpus into the service's PostgreSQL database (the index's tsvector is a generated column). */
async function seedPostgres(url, options) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await writeCorpus(options, async (batch) => {
      const column = (key) => batch.map((m) => m[key]);
      await client.query(
        `insert into messages (id, room_id, sender_id, body, created_at, seq)
         select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[], $6::bigint[])`,
        [column('id'), column('roomId'), column('senderId'), column('body'), column('createdAt'), column('seq')],
      );
      await client.query('insert into message_search (message_id, words) select * from unnest($1::uuid[], $2::text[])', [column('id'), column('words')]);
    });
    for (const [roomId, seq] of result.lastSeqs) await client.query('update rooms set last_seq = $1 where id = $2', [seq, roomId]);
    await client.query('analyze');
    return result;
  } finally {
    await client.end();
  }
}

/**
 * Scenario 8: `GET /api/v1/search/messages` over 200,000 messages (20,000 with --quick) in 20
 * rooms, on SQLite and then on PostgreSQL, searched by an agent that is a member of half of them: a
 * two-word query, one request at a time (latency: the target is p99 < 50 ms on SQLite) and with 8
 * connections (throughput), a short prefix, and a history page of 50 alongside as the yardstick of
 * the machine's state. The PostgreSQL figures are reported beside SQLite's (no target).
 */
export async function searchScenario(bench) {
  const sqlite = await searchOn(bench, 'sqlite');
  let postgres;
  const database = await createDatabase();
  if (database.error) postgres = { error: database.error };
  else {
    try {
      postgres = await searchOn(bench, 'postgres', database.url);
    } catch (err) {
      postgres = { error: err.message };
    } finally {
      await database.drop().catch(() => {});
    }
  }
  if (postgres.error) bench.log(`postgres: ${postgres.error}`);
  return { ...sqlite, postgres };
}

async function searchOn(bench, engine, postgresUrl) {
  const { quick, tmp, log } = bench;
  const dbPath = join(tmp, 'search.sqlite');
  const databaseUrl = engine === 'sqlite' ? `sqlite:${dbPath}` : postgresUrl;
  const mint = jwtMinter(bench.jwtSecret);
  const total = quick ? 20_000 : 200_000;
  const procs = [];
  try {
    // Started once to create the schema and the fixtures, then again over the seeded database.
    let service = await startService({ name: `service-search-setup-${engine}`, databaseUrl, jwtSecret: bench.jwtSecret });
    let admin;
    let member;
    const rooms = [];
    try {
      admin = await service.api.createAgent('admin');
      member = await service.api.createAgent('agent');
      for (let r = 0; r < ROOMS; r++) rooms.push((await service.api.createRoom(admin.id, r % 2 === 0 ? [member.id] : [])).id);
    } finally {
      await service.proc.stop();
    }

    const t0 = Date.now();
    const options = { total, rooms, senders: [admin.id, member.id] };
    const { query, prefixQuery } = engine === 'sqlite' ? await seed(dbPath, options) : await seedPostgres(postgresUrl, options);
    log(`${engine}: seeded ${total} messages in ${((Date.now() - t0) / 1000).toFixed(1)} s; query "${query}", prefix query "${prefixQuery}"`);

    service = await startService({ name: `service-search-${engine}`, databaseUrl, jwtSecret: bench.jwtSecret, profileDir: bench.profileDir });
    procs.push(service.proc);
    const headers = { authorization: `Bearer ${mint(member.id)}` };
    const url = (q) => `${service.url}/api/v1/search/messages?q=${encodeURIComponent(q)}&limit=50`;
    const first = await service.api.expect(200, 'GET', url(query).slice(service.url.length), { headers });
    if (first.results.length === 0) throw new Error(`the query "${query}" found nothing`);
    log(`first page: ${first.results.length} results, hasMore ${first.hasMore}`);

    const seconds = quick ? 1 : 5;
    const rounds = quick ? 1 : 3;
    await cannon({ url: url(query), headers, durationSeconds: 1, connections: 1 }); // warm-up
    // A history page of the same size, one at a time, as a yardstick: what the machine gives the
    // simplest authenticated read of 50 messages while the searches run.
    const historyUrl = `${service.url}/api/v1/rooms/${rooms[0]}/messages?limit=50`;
    const targets = {
      'two words': { url: url(query), connections: 1 },
      'two words x8': { url: url(query), connections: 8 },
      prefix: { url: url(prefixQuery), connections: 1 },
      history: { url: historyUrl, connections: 1 },
    };
    const runs = await alternate(Object.keys(targets), rounds, async (t) => {
      const r = await cannon({ url: targets[t].url, headers, durationSeconds: seconds, connections: targets[t].connections });
      log(`${engine} ${t.padEnd(13)} ${r.rps} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non-2xx ${r.non2xx}  errors ${r.errors}`);
      return r;
    });
    const median = (list, key) => [...list].map((r) => r[key]).sort((a, b) => a - b)[Math.floor(list.length / 2)];
    const summary = (list) => ({ rps: median(list, 'rps'), p50: median(list, 'p50'), p99: median(list, 'p99'), non2xx: list.reduce((a, r) => a + r.non2xx + r.errors, 0) });
    const result = { messages: total, rooms: ROOMS, memberOf: ROOMS / 2, query, prefixQuery, twoWords: summary(runs['two words']), twoWordsConcurrent: summary(runs['two words x8']), prefix: summary(runs.prefix), history: summary(runs.history) };
    if ([result.twoWords, result.twoWordsConcurrent, result.prefix, result.history].some((r) => r.non2xx > 0)) throw new Error('the service answered non-2xx or failed requests');
    return result;
  } finally {
    for (const p of procs) await p.stop();
  }
}
