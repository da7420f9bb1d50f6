import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { v7 as uuidv7 } from 'uuid';
import { searchText } from '../../dist/core/search-text.js';
import { coalesceWrites } from '../../dist/realtime/outbound/write-coalescing.js';
import { startCheckpointer } from '../../dist/store/sqlite-checkpointer.js';
import { serveRelay, startSocketServer } from './socket-server.js';

/**
 * R3, the ceiling of the service's design (a writer thread, the search entry and `seq` in the send's transaction), for scenario 1: R1 (relay.js) plus
 * only the writes the service must make for each message, made the way the service makes them,
 * and nothing else (no authentication, rate limit, validation beyond shape, membership check,
 * idempotency, webhooks, inbox or metrics):
 * - in the service's tables and indexes (messages with `seq`, the FTS5 search entry, the audit
 *   record under the audit log's four reading orders; rooms' `last_seq`), on SQLite with the
 *   service's pragmas (WAL, synchronous=NORMAL) and its checkpoints (a passive checkpoint every
 *   200 ms on a thread of their own, sqlite-checkpointer.ts);
 * - group-committed on a worker thread that owns the write connection (the event loop never waits on
 *   the disk), one message to the thread per batch, `seq` computed in SQL, commits spaced by 4 ms
 *   while at least 1,000 messages a second arrive (the service's policy, write-batcher.ts);
 * - acknowledged `{messageId, seq}` and broadcast after the commit, in order, with the socket's
 *   frames of one send corked into one write (the service's write-coalescing.ts).
 * BASELINE_DB: the SQLite file (created). BASELINE_WRITER=loop and BASELINE_WRITES=phase1: see openWriter.
 * Today's message (Phase 3): its columns (thread, edits, `data`, task; the thread index) and its
 * wire shape in `message:new` (threadId, editedAt, deletedAt, data, attachments, task, replyCount,
 * lastReplyAt), a send's `data` stored as JSON.
 * BASELINE_SCHEMA=phase2: R3 as it was until Phase 3 (one audit index, on (event, id); SQLite's own
 * checkpoints every 1,000 pages, on the writer thread; Phase 2's message, columns and wire).
 * BASELINE_WIRE=phase2: today's R3 but `message:new` in Phase 2's shape (what today's fields cost).
 * BASELINE_CHECKS=spec: R3 plus the checks the specification requires of every send, each made the
 * minimal way (specChecks): a ceiling for the service with its per-event duties, not only its writes.
 * BASELINE_PG_URL: R3 on PostgreSQL instead (openPostgresWriter): the same writes, batches and policy.
 */
const SPACING_MS = 4;

/** The audit log's reading orders (the service's migration 014), or Phase 2's one index; the same SQL on both engines. */
const auditIndexesFor = (today) => (today
  ? `create index if not exists audit_log_time_idx on audit_log (created_at, id);
     create index if not exists audit_log_event_time_idx on audit_log (event, created_at, id);
     create index if not exists audit_log_actor_time_idx on audit_log (actor_id, created_at, id);
     create index if not exists audit_log_subject_time_idx on audit_log (subject_id, created_at, id);`
  : 'create index if not exists audit_log_event_idx on audit_log (event, id);');
const SPACED_FROM_RATE = 1000;

/**
 * The write connection and what it does with one batch. Runs on the worker thread (the design), or
 * on the event loop with `BASELINE_WRITER=loop` (the reference build's design, before the writer thread).
 * `phase2` false (`BASELINE_WRITES=phase1`): the message and its audit record only, as before
 * Phase 2 (no search entry, no `seq`, no counter): with both knobs, the price of the writes that
 * the design prescribes is R3's cost less this one's, measured in the same run.
 * `today` false (`BASELINE_SCHEMA=phase2`): SQLite's own checkpoints; `auditIndexes`: auditIndexesFor(today).
 * Its source is also the worker's (Function#toString): it may use only its parameters.
 */
function openWriter(Database, path, phase2, today, auditIndexes) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  // The checkpoints are the checkpointer thread's (below); SQLite's own only as the service's safety net.
  if (today) db.pragma('wal_autocheckpoint = 20000');
  // As the service's writer (sqlite.ts): SQLite's busy handler would sleep (1, 2, 5, 10 ... ms) each
  // time a commit meets the checkpointer, where restarting the WAL can simply wait for a later commit.
  if (today) db.pragma('busy_timeout = 0');
  db.exec(`
    create table if not exists rooms (id text primary key, last_seq bigint default 0 not null);
    create table if not exists messages (id text primary key, room_id text not null references rooms (id), sender_id text not null,
      body text not null, mentions text, reply_to text, client_msg_id text, created_at text not null, seq bigint default 0 not null);
    create index if not exists messages_room_id_idx on messages (room_id, id);
    create unique index if not exists messages_client_msg_id_uq on messages (room_id, sender_id, client_msg_id) where client_msg_id is not null;
    create table if not exists audit_log (id text primary key, event text not null, actor_id text, subject_id text, detail text not null, created_at text not null);
  `);
  const hasColumn = (name) => db.prepare("select 1 from pragma_table_info('messages') where name = ?").get(name) !== undefined;
  if (today && !hasColumn('thread_id')) {
    // Phase 3's columns of a message (migrations 010, 012, 013), as the service's.
    db.exec(`
      alter table messages add column thread_id text;
      alter table messages add column reply_count integer default 0 not null;
      alter table messages add column last_reply_at text;
      alter table messages add column edited_at text;
      alter table messages add column deleted_at text;
      alter table messages add column data text;
      alter table messages add column task text;
      create index if not exists messages_thread_seq_idx on messages (thread_id, seq) where thread_id is not null;
    `);
  }
  db.exec(auditIndexes);
  if (phase2) {
    db.exec(`
      create unique index if not exists messages_room_seq_uq on messages (room_id, seq);
      create virtual table if not exists message_search using fts5(message_id unindexed, words, tokenize = 'ascii', columnsize = 0);
    `);
  }
  db.pragma('foreign_keys = ON');
  const addRoom = db.prepare('insert or ignore into rooms (id) values (?)');
  const bump = db.prepare('update rooms set last_seq = last_seq + ? where id = ?');
  const insertMessage = today && phase2
    ? db.prepare('insert into messages (id, room_id, sender_id, body, created_at, thread_id, data, task, seq) values (?, ?, ?, ?, ?, null, ?, null, (select last_seq from rooms where id = ?) - ?)')
    : phase2
    ? db.prepare('insert into messages (id, room_id, sender_id, body, created_at, seq) values (?, ?, ?, ?, ?, (select last_seq from rooms where id = ?) - ?)')
    : db.prepare('insert into messages (id, room_id, sender_id, body, created_at) values (?, ?, ?, ?, ?)');
  const insertWords = phase2 ? db.prepare('insert into message_search (message_id, words) values (?, ?)') : null;
  const insertAudit = db.prepare("insert into audit_log (id, event, actor_id, subject_id, detail, created_at) values (?, 'message-sent', ?, ?, ?, ?)");
  const lastSeq = db.prepare('select last_seq from rooms where id = ?').pluck();
  return (batch) => {
    if (batch.rooms) {
      for (const room of batch.rooms) addRoom.run(room);
      return {};
    }
    // batch: { counts: [[roomId, count]], rows: [[id, roomId, senderId, body, createdAt, fromEnd, words, auditId, detail, data]] }
    db.exec('begin immediate');
    try {
      if (phase2) for (const [room, count] of batch.counts) bump.run(count, room);
      for (const [id, room, sender, body, createdAt, fromEnd, words, auditId, detail, data] of batch.rows) {
        if (today && phase2) insertMessage.run(id, room, sender, body, createdAt, data, room, fromEnd);
        else if (phase2) insertMessage.run(id, room, sender, body, createdAt, room, fromEnd);
        else insertMessage.run(id, room, sender, body, createdAt);
        if (phase2 && words !== '') insertWords.run(id, words);
        insertAudit.run(auditId, sender, id, detail, createdAt);
      }
      const lastSeqs = phase2 ? batch.counts.map(([room]) => lastSeq.get(room)) : batch.counts.map(() => 0);
      db.exec('commit');
      return { lastSeqs };
    } catch (err) {
      if (db.inTransaction) db.exec('rollback');
      return { error: String(err.message) };
    }
  };
}

/**
 * R3 on PostgreSQL: the service's PostgreSQL tables (uuid keys, timestamptz, the search entry's
 * tsvector generated from its words under a GIN index) and one transaction per batch, on one
 * connection, as the service makes it (write-batcher.ts, messages.service.ts): one statement for the
 * whole batch (the counters, locked in id order, returning their new values; the messages, their
 * `seq` from those; the search entries; the audit records). `synchronous_commit` on.
 */
async function openPostgresWriter(url, today) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`
    create table if not exists rooms (id uuid primary key, last_seq bigint default 0 not null);
    create table if not exists messages (id uuid primary key, room_id uuid not null references rooms (id), sender_id uuid not null,
      body text not null, mentions text, reply_to uuid, client_msg_id text, created_at timestamptz not null, seq bigint default 0 not null);
    create index if not exists messages_room_id_idx on messages (room_id, id);
    create unique index if not exists messages_client_msg_id_uq on messages (room_id, sender_id, client_msg_id) where client_msg_id is not null;
    create unique index if not exists messages_room_seq_uq on messages (room_id, seq);
    create table if not exists message_search (message_id uuid primary key references messages (id), words text not null,
      tsv tsvector not null generated always as (array_to_tsvector(string_to_array(words, ' '))) stored);
    create index if not exists message_search_tsv_idx on message_search using gin (tsv);
    create table if not exists audit_log (id uuid primary key, event text not null, actor_id uuid, subject_id uuid, detail jsonb not null, created_at timestamptz not null);
  `);
  await client.query(auditIndexesFor(today));
  if (today) {
    await client.query(`
      alter table messages add column if not exists thread_id uuid, add column if not exists reply_count integer default 0 not null,
        add column if not exists last_reply_at timestamptz, add column if not exists edited_at timestamptz,
        add column if not exists deleted_at timestamptz, add column if not exists data jsonb, add column if not exists task jsonb;
      create index if not exists messages_thread_seq_idx on messages (thread_id, seq) where thread_id is not null;
    `);
  }
  // One statement per batch, as the service's (insertBatchOnPostgres, messages.store.ts): alone its
  // own transaction, answered after the commit.
  const batchSql = `with bumped as (
      update rooms set last_seq = rooms.last_seq + c.n
      from (select id from rooms where id = any($1::uuid[]) order by id for update) as locked
      join unnest($1::uuid[], $2::int[]) as c (id, n) on c.id = locked.id
      where rooms.id = c.id
      returning rooms.id, rooms.last_seq
    ), inserted as (
      insert into messages (id, room_id, sender_id, body, created_at, seq${today ? ', data' : ''})
      select m.id, m.room_id, m.sender_id, m.body, m.created_at, bumped.last_seq - m.from_end${today ? ', m.data::jsonb' : ''}
      from unnest($3::uuid[], $4::uuid[], $5::uuid[], $6::text[], $7::timestamptz[], $8::int[]${today ? ', $13::text[]' : ''}) as m (id, room_id, sender_id, body, created_at, from_end${today ? ', data' : ''})
      join bumped on bumped.id = m.room_id
    ), searched as (
      insert into message_search (message_id, words) select * from unnest($9::uuid[], $10::text[])
    ), audited as (
      insert into audit_log (id, event, actor_id, subject_id, detail, created_at)
      select a.id, 'message-sent', a.actor_id, a.subject_id, a.detail::jsonb, a.created_at
      from unnest($11::uuid[], $5::uuid[], $3::uuid[], $12::text[], $7::timestamptz[]) as a (id, actor_id, subject_id, detail, created_at)
    )
    select id, last_seq from bumped`;
  return async (batch) => {
    if (batch.rooms) {
      await client.query('insert into rooms (id) select unnest($1::uuid[]) on conflict do nothing', [batch.rooms]);
      return {};
    }
    const rooms = batch.counts.map(([room]) => room);
    const col = (i) => batch.rows.map((row) => row[i]);
    const words = batch.rows.filter((row) => row[6] !== '');
    try {
      const { rows } = await client.query(batchSql, [
        rooms, batch.counts.map(([, n]) => n),
        col(0), col(1), col(2), col(3), col(4), col(5),
        words.map((row) => row[0]), words.map((row) => row[6]),
        col(7), col(8),
        ...(today ? [col(9)] : []),
      ]);
      const lastSeqs = new Map(rows.map((row) => [row.id, Number(row.last_seq)]));
      return { lastSeqs: rooms.map((room) => lastSeqs.get(room)) };
    } catch (err) {
      return { error: String(err.message) };
    }
  };
}

const phase2 = process.env.BASELINE_WRITES !== 'phase1';
const today = process.env.BASELINE_SCHEMA !== 'phase2';
const path = process.env.BASELINE_DB ?? ':memory:';
const driver = createRequire(import.meta.url).resolve('better-sqlite3');
let post;
if (process.env.BASELINE_PG_URL) {
  post = await openPostgresWriter(process.env.BASELINE_PG_URL, today);
} else if (process.env.BASELINE_WRITER === 'loop') {
  const write = openWriter(createRequire(import.meta.url)(driver), path, phase2, today, auditIndexesFor(today));
  post = async (batch) => write(batch);
} else {
  const writer = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const write = (${openWriter.toString()})(require(workerData.driver), workerData.path, workerData.phase2, workerData.today, workerData.auditIndexes);
     parentPort.on('message', (batch) => parentPort.postMessage(write(batch)));`,
    { eval: true, workerData: { path, driver, phase2, today, auditIndexes: auditIndexesFor(today) } },
  );
  if (today && path !== ':memory:') startCheckpointer(path, 'normal');
  const replies = [];
  writer.on('message', (reply) => replies.shift()(reply));
  post = (batch) => new Promise((resolve) => {
    replies.push(resolve);
    writer.postMessage(batch);
  });
}

// Group commit, as write-batcher.ts: one batch at a time; spaced while writes arrive fast.
let queue = [];
let running = false;
let scheduled = false;
let lastStart = -Infinity;
let windowStart = -Infinity;
let windowWrites = 0;
let fast = false;

async function flush() {
  scheduled = false;
  if (running || queue.length === 0) return;
  running = true;
  lastStart = performance.now();
  const batch = queue;
  queue = [];
  const counts = new Map();
  for (const { message } of batch) counts.set(message.roomId, (counts.get(message.roomId) ?? 0) + 1);
  const left = new Map(counts);
  // Each message's place from the end of its room's run in the batch (its `seq` is the room's new last less that).
  const fromEnds = batch.map(({ message }) => {
    const fromEnd = left.get(message.roomId) - 1;
    left.set(message.roomId, fromEnd);
    return fromEnd;
  });
  const rows = batch.map(({ message }, i) => {
    const fromEnd = fromEnds[i];
    const data = today && message.data !== null && message.data !== undefined ? JSON.stringify(message.data) : null;
    return [message.id, message.roomId, message.authorAgentId, message.body, message.createdAt, fromEnd, phase2 ? searchText(message.body) : '', uuidv7(), JSON.stringify({ roomId: message.roomId }), data];
  });
  const order = [...counts.keys()];
  const reply = await post({ counts: order.map((room) => [room, counts.get(room)]), rows });
  const lastSeqs = new Map(order.map((room, i) => [room, reply.lastSeqs?.[i]]));
  for (const [i, { message, ack }] of batch.entries()) {
    if (reply.error) {
      ack({ error: { code: 'INTERNAL_ERROR', message: 'not stored' } });
      continue;
    }
    const fromEnd = fromEnds[i];
    if (!phase2) {
      ack({ messageId: message.id });
    } else {
      message.seq = lastSeqs.get(message.roomId) - fromEnd;
      ack({ messageId: message.id, seq: message.seq });
    }
    nsp.to(message.roomId).emit('message:new', message);
  }
  running = false;
  if (queue.length > 0) schedule();
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  const wait = fast ? lastStart + SPACING_MS - performance.now() : 0;
  if (wait <= 0) setImmediate(flush);
  else setTimeout(flush, wait);
}

function enqueue(entry) {
  const now = performance.now();
  if (now - windowStart >= 100) {
    fast = (windowWrites * 1000) / (now - windowStart) >= SPACED_FROM_RATE;
    windowStart = now;
    windowWrites = 0;
  }
  windowWrites++;
  queue.push(entry);
  schedule();
}

/**
 * A message as `message:new` carries it today (the service's toWsMessage): Phase 3's fields, with
 * the values a plain send has. `seq` is set after the commit.
 */
const todaysMessage = ({ id, roomId, authorAgentId, body, createdAt, data }) => ({
  id, roomId, authorAgentId, body, createdAt, seq: 0, threadId: null, editedAt: null, deletedAt: null,
  data: data ?? null, attachments: [], task: null, replyCount: 0, lastReplyAt: null,
});

/**
 * BASELINE_CHECKS=spec: what the specification requires of every send before it is stored, each
 * done the minimal way, synchronously: the connection's event budget (a fixed window), the payload
 * checked by the service's own compiled schema (SendMessageInput: its Text kind counts code points
 * and refuses NUL), membership (the socket's rooms), and the service's own metrics (its latency
 * histogram, its per-room message count). What the service does besides (authorisation
 * state, the agent's budget across connections, idempotency, attention, the per-socket queue,
 * webhooks, the cluster's bus) is not here.
 */
async function specChecks() {
  const { compile } = await import('../../dist/core/validation.js');
  const { SendMessageInput } = await import('@agent-messaging/protocol');
  const { createMetrics } = await import('../../dist/ops/metrics.js');
  const sendInput = compile(SendMessageInput);
  const metrics = createMetrics();
  const EVENTS_PER_SECOND = 1_000_000; // counted, never reached by the bench
  return (socket, payload, ack) => {
    const received = performance.now();
    const budget = (socket.data.budget ??= { from: received, count: 0 });
    if (received - budget.from >= 1000) {
      budget.from = received;
      budget.count = 0;
    }
    if (++budget.count > EVENTS_PER_SECOND) {
      ack({ error: { code: 'RATE_LIMITED', message: 'Too many events' } });
      return undefined;
    }
    try {
      sendInput.parse(payload);
    } catch (err) {
      ack({ error: { code: 'VALIDATION_ERROR', message: err.message, details: err.details } });
      return undefined;
    }
    if (!socket.rooms.has(payload.roomId)) {
      ack({ error: { code: 'FORBIDDEN', message: 'Not a member of this room' } });
      return undefined;
    }
    return (answer) => {
      ack(answer);
      if (answer.error === undefined) metrics.publisher.publish({ type: 'message.created', message: { roomId: payload.roomId } });
      metrics.wsLatency.observe({ event: 'message:send' }, (performance.now() - received) / 1000);
    };
  };
}

const admit = process.env.BASELINE_CHECKS === 'spec' ? await specChecks() : undefined;
const nsp = startSocketServer();

const todaysWire = today && process.env.BASELINE_WIRE !== 'phase2';
serveRelay(nsp, (message, ack) => enqueue({ message: todaysWire ? todaysMessage(message) : message, ack }), async (socket, roomIds) => {
  coalesceWrites(socket);
  await post({ rooms: roomIds });
}, admit);
