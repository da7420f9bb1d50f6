import Database from 'better-sqlite3';
import { startSocketServer } from './socket-server.js';

/**
 * The catch-up scenario's baseline: a bare Socket.IO server (the service's socket.io, namespace
 * /agents, websocket transport, no compression) over the service's own SQLite file, opened
 * read-only, answering `room:sync` with one prepared statement per page, mapped to the service's
 * WebSocket item shape. The room's `last_seq` (which the service reads first, so that a page has
 * no hole) is a primary-key read of its own. No authentication, no validation beyond the types,
 * no room check, no rate limit.
 */
const db = new Database(process.env.BARE_DB, { readonly: true, fileMustExist: true });
const page = db.prepare('select id, room_id, sender_id, body, created_at, seq, thread_id, edited_at, deleted_at, reply_count, last_reply_at from messages where room_id = ? and seq > ? order by seq limit ?');
const lastSeqOf = db.prepare('select last_seq from rooms where id = ?').pluck();

const nsp = startSocketServer({ transports: ['websocket'], perMessageDeflate: false });

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
    // The service's wire form of a message (threads and edits included), key for key.
    const messages = rows.slice(0, limit).map((r) => ({
      id: r.id, roomId: r.room_id, authorAgentId: r.sender_id, body: r.body, createdAt: r.created_at, seq: r.seq,
      threadId: r.thread_id ?? null, editedAt: r.edited_at ?? null, deletedAt: r.deleted_at ?? null,
      ...(r.thread_id == null ? { replyCount: Number(r.reply_count ?? 0), lastReplyAt: r.last_reply_at ?? null } : {}),
    }));
    ack({ messages, lastSeq, hasMore: rows.length > limit });
  });
});

