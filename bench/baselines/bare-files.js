import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import pg from 'pg';

/**
 * Scenario 19's baseline: a bare Fastify route that streams a body into the same storage kind as the
 * service (chunks of 256 KiB: SQLite BLOBs through better-sqlite3 on the event loop, or PostgreSQL
 * bytea through one pooled INSERT each), hashing as it goes, and streams them back: no
 * authentication, no name checks, no rate limit, no access rule, no audit, no worker thread.
 * BARE_DB: `sqlite:<path>` or a postgres:// URL (its own database).
 */
const CHUNK = 256 * 1024;
const url = process.env.BARE_DB;
let insert;
let select;
if (url.startsWith('sqlite:')) {
  const db = new Database(url.slice('sqlite:'.length));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('create table if not exists chunks (file_id text not null, n integer not null, bytes blob not null, primary key (file_id, n))');
  const ins = db.prepare('insert into chunks (file_id, n, bytes) values (?, ?, ?)');
  const sel = db.prepare('select bytes from chunks where file_id = ? and n = ?');
  insert = async (id, n, bytes) => ins.run(id, n, bytes);
  select = async (id, n) => sel.get(id, n)?.bytes;
} else {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query('create table if not exists chunks (file_id uuid not null, n integer not null, bytes bytea not null, primary key (file_id, n))');
  insert = (id, n, bytes) => pool.query('insert into chunks (file_id, n, bytes) values ($1, $2, $3)', [id, n, bytes]);
  select = async (id, n) => (await pool.query('select bytes from chunks where file_id = $1 and n = $2', [id, n])).rows[0]?.bytes;
}

const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
app.get('/healthz', () => ({ status: 'ok' }));
app.post('/files', async (request, reply) => {
  const id = randomUUID();
  const hash = createHash('sha256');
  let n = 0;
  let size = 0;
  let chunk = Buffer.allocUnsafe(CHUNK);
  let filled = 0;
  for await (const piece of request.raw) {
    hash.update(piece);
    size += piece.length;
    let offset = 0;
    while (offset < piece.length) {
      const take = Math.min(CHUNK - filled, piece.length - offset);
      piece.copy(chunk, filled, offset, offset + take);
      filled += take;
      offset += take;
      if (filled === CHUNK) {
        await insert(id, n++, chunk);
        chunk = Buffer.allocUnsafe(CHUNK);
        filled = 0;
      }
    }
  }
  if (filled > 0) await insert(id, n++, chunk.subarray(0, filled));
  return reply.status(201).send({ id, size, sha256: hash.digest('hex'), chunks: n });
});
app.get('/files/:id', async (request, reply) => {
  const { id } = request.params;
  async function* chunks() {
    for (let n = 0; ; n++) {
      const bytes = await select(id, n);
      if (bytes === undefined) return;
      yield bytes;
    }
  }
  return reply.type('application/octet-stream').send(Readable.from(chunks(), { objectMode: false }));
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
