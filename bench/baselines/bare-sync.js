import { createServer } from 'node:http';
import Database from 'better-sqlite3';
import { Server } from 'socket.io';

/**
 * The catch-up scenario's baseline: a bare Socket.IO server (the service's socket.io, namespace
 * /agents, websocket transport, no compression) over the service's own SQLite file, opened
 * read-only, answering `room:sync` with one prepared statement per page, mapped to the service's
 * WebSocket item shape. The room's `last_seq` (which the service reads first, so that a page has
 * no hole) is a primary-key read of its own. No authentication, no validation beyond the types,
 * no room check, no rate limit.
 */
const db = new Database(process.env.BARE_DB, { readonly: true, fileMustExist: true });
const page = db.prepare('select id, room_id, sender_id, body, created_at, seq from messages where room_id = ? and seq > ? order by seq limit ?');
const lastSeqOf = db.prepare('select last_seq from rooms where id = ?').pluck();

const http = createServer((req, res) => {
  if (req.url === '/healthz') {
    res.setHeader('content-type', 'application/json');
    res.end('{"status":"ok"}');
    return;
  }
  res.statusCode = 404;
  res.end();
});
const io = new Server(http, { serveClient: false, transports: ['websocket'], perMessageDeflate: false });
const nsp = io.of('/agents');

nsp.on('connection', (socket) => {
  socket.emit('agent:hello-ack', { agentId: socket.id, rooms: [] });
  socket.on('room:sync', (payload, ack) => {
    if (typeof ack !== 'function') return;
    const { roomId, afterSeq, limit = 50 } = payload ?? {};
    if (typeof roomId !== 'string' || !Number.isSafeInteger(afterSeq) || !Number.isSafeInteger(limit)) {
      ack({ error: { code: 'VALIDATION_ERROR', message: 'roomId, afterSeq and limit are required' } });
      return;
    }
    const lastSeq = Number(lastSeqOf.get(roomId) ?? 0);
    const rows = page.all(roomId, afterSeq, limit + 1);
    const messages = rows.slice(0, limit).map((r) => ({ id: r.id, roomId: r.room_id, authorAgentId: r.sender_id, body: r.body, createdAt: r.created_at, seq: r.seq }));
    ack({ messages, lastSeq, hasMore: rows.length > limit });
  });
});

http.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
const stop = () => {
  io.close(() => process.exit(0)); // also closes the HTTP server
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
