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
const page = db.prepare('select id, room_id, sender_id, body, created_at, seq, thread_id, edited_at, deleted_at, data, task, reply_count, last_reply_at, stream_state, importance, ack_required, ack_count from messages where room_id = ? and seq > ? order by seq limit ?');
// The files of a page's messages, one read per page as the service makes it.
const filesOf = db.prepare(`select ma.message_id, f.id, f.name, f.content_type, f.size, f.sha256 from message_attachments ma join files f on f.id = ma.file_id
  where ma.message_id in (select value from json_each(?)) order by ma.message_id, ma.position`);
const lastSeqOf = db.prepare('select last_seq from rooms where id = ?').pluck();
// Where what is left of the room starts (retention: docs/retention.md).
const oldestSeqOf = db.prepare('select min(seq) from messages where room_id = ?').pluck();

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
    const files = new Map();
    for (const f of rows.length === 0 ? [] : filesOf.all(JSON.stringify(rows.slice(0, limit).map((r) => r.id)))) {
      if (!files.has(f.message_id)) files.set(f.message_id, []);
      files.get(f.message_id).push({ id: f.id, name: f.name, contentType: f.content_type, size: Number(f.size), sha256: f.sha256 ?? '' });
    }
    // The service's wire form of a message (threads, edits, data, files and tasks included), key for key.
    const messages = rows.slice(0, limit).map((r) => ({
      id: r.id, roomId: r.room_id, authorAgentId: r.sender_id, body: r.body, createdAt: r.created_at, seq: r.seq,
      threadId: r.thread_id ?? null, editedAt: r.edited_at ?? null, deletedAt: r.deleted_at ?? null,
      data: r.data == null ? null : JSON.parse(r.data), attachments: files.get(r.id) ?? [], task: r.task == null ? null : JSON.parse(r.task),
      streaming: r.stream_state === 'open', streamEnd: r.stream_state === 'complete' || r.stream_state === 'interrupted' ? r.stream_state : null,
      importance: r.importance ?? 'normal', ack: r.ack_required == null ? null : { required: Number(r.ack_required), acked: Number(r.ack_count) },
      ...(r.thread_id == null ? { replyCount: Number(r.reply_count ?? 0), lastReplyAt: r.last_reply_at ?? null } : {}),
    }));
    const oldest = oldestSeqOf.get(roomId);
    ack({ messages, lastSeq, hasMore: rows.length > limit, oldestSeq: oldest == null ? null : Number(oldest) });
  });
});

