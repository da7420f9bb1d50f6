import Database from 'better-sqlite3';
import { serveRelay, startSocketServer } from './socket-server.js';

/**
 * The transport's ceiling, for the ratios of scenarios 1, 2 and 5.
 * R1: a minimal Socket.IO relay on the service's namespace: rooms come from the handshake query,
 * `message:send` is acknowledged with {messageId} and broadcast as `message:new` to the room.
 * No authentication work per event, no persistence.
 * R2 (BASELINE_MODE=r2): R1 plus one plain better-sqlite3 insert per message into a table shaped
 * like the service's, with the service's pragmas (WAL, synchronous=NORMAL).
 */
const mode = process.env.BASELINE_MODE ?? 'r1';

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

const nsp = startSocketServer();

serveRelay(nsp, (message, ack) => {
  if (insert) insert.run(message.id, message.roomId, message.authorAgentId, message.body, message.createdAt);
  ack({ messageId: message.id });
  nsp.to(message.roomId).emit('message:new', message);
});
