import { createServer } from 'node:http';
import Database from 'better-sqlite3';
import { Server } from 'socket.io';
import { v7 as uuidv7 } from 'uuid';

/**
 * The transport's ceiling, for the ratios of scenarios 1, 2 and 5.
 * R1: a minimal Socket.IO relay on the service's namespace: rooms come from the handshake query,
 * `message:send` is acknowledged with {messageId} and broadcast as `message:new` to the room.
 * No authentication work per event, no persistence.
 * R2 (BASELINE_MODE=r2): R1 plus one plain better-sqlite3 insert per message into a table shaped
 * like the service's, with the service's pragmas (WAL, synchronous=NORMAL).
 */
const mode = process.env.BASELINE_MODE ?? 'r1';
const port = Number(process.env.PORT ?? 0);

let insert = null;
if (mode === 'r2') {
  const db = new Database(process.env.BASELINE_DB ?? ':memory:');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`create table if not exists messages (
    id text primary key, room_id text not null, sender_id text not null, body text not null, created_at text not null)`);
  db.exec('create index if not exists messages_room_id_idx on messages (room_id, id)');
  insert = db.prepare('insert into messages (id, room_id, sender_id, body, created_at) values (?, ?, ?, ?, ?)');
}

const http = createServer((req, res) => {
  if (req.url === '/healthz') {
    res.setHeader('content-type', 'application/json');
    res.end('{"status":"ok"}');
    return;
  }
  res.statusCode = 404;
  res.end();
});
const io = new Server(http, { serveClient: false });
const nsp = io.of('/agents');

nsp.on('connection', (socket) => {
  const { agentId = socket.id, rooms = '' } = socket.handshake.query;
  const roomIds = String(rooms).split(',').filter((r) => r !== '');
  socket.join(roomIds);
  socket.emit('agent:hello-ack', { agentId, rooms: roomIds });
  socket.on('message:send', (payload, ack) => {
    if (typeof ack !== 'function') return;
    if (typeof payload !== 'object' || payload === null || typeof payload.roomId !== 'string' || typeof payload.body !== 'string') {
      ack({ error: { code: 'VALIDATION_ERROR', message: 'roomId and body are required' } });
      return;
    }
    const message = { id: uuidv7(), roomId: payload.roomId, authorAgentId: String(agentId), body: payload.body, createdAt: new Date().toISOString() };
    if (insert) insert.run(message.id, message.roomId, message.authorAgentId, message.body, message.createdAt);
    ack({ messageId: message.id });
    nsp.to(message.roomId).emit('message:new', message);
  });
});

http.listen(port, '127.0.0.1');
const stop = () => {
  io.close(() => process.exit(0)); // also closes the HTTP server
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
