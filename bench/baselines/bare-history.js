import Database from 'better-sqlite3';
import Fastify from 'fastify';

/**
 * Scenario 3's baseline: a bare Fastify route returning a history page of the service's own
 * messages table (the same SQLite file, opened read-only), in the service's REST shape, with one
 * prepared statement and nothing else: no authentication, no rate limit, no room check.
 */
const db = new Database(process.env.BARE_DB, { readonly: true, fileMustExist: true });
const page = db.prepare('select id, room_id, sender_id, body, created_at from messages where room_id = ? order by id desc limit ?');

const app = Fastify({ logger: false });
app.get('/healthz', () => ({ status: 'ok' }));
app.get('/rooms/:id/messages', (request) => {
  const limit = Number(request.query.limit ?? 50);
  const rows = page.all(request.params.id, limit + 1);
  const hasMore = rows.length > limit;
  const messages = rows.slice(0, limit).map((r) => ({ id: r.id, roomId: r.room_id, senderId: r.sender_id, body: r.body, createdAt: r.created_at }));
  return { messages, nextCursor: messages.length > 0 ? messages[messages.length - 1].id : null, hasMore };
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => app.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
