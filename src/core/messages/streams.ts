import type { CompiledQuery, Kysely } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { AppError, conflict, forbidden, notFound, validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { requireRoom, type Authz } from '../authz/authz.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import type { PresenceReader } from '../../presence/presence.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { listMemberIds } from '../rooms/rooms.store.js';
import { searchEntryStatement } from './search-entries.store.js';
import { searchText } from '../search-text.js';
import { compile, codePointLength, parseId, requireObject } from '../validation.js';
import { AppendMessageInput, EndMessageInput, MESSAGE_BODY_MAX, checkMessageData } from '@agent-messaging/protocol';
import { attentionOf, decideAttention, isDirectRoom, threadRootOf, type AttentionCauses } from './attention.js';
import { removeAttachments, withAttachments } from './attachments.store.js';
import type { Message, StreamEnd } from './message.js';
import { findMessageInRoom } from './messages.store.js';

/**
 * Streamed messages (docs/streaming.md). A message started with `streaming: true` is stored at once
 * (the send path); its appends live in the memory of the node that receives them: applied in order,
 * answered with the new length, merged into `message:delta`s (at most one per DELTA_SPACING_MS per
 * message), and written to the database at most once per FLUSH_SPACING_MS (the stored text that
 * history and catch-up read, and the time of the last append, which the idle end reads). Its end,
 * whoever causes it (the sender, the idle sweep of any node, a deletion), is one conditional
 * transaction on the row: it happens once. Search, attention and `message.created` webhooks are
 * written by the end, with the final text.
 */

/** Merged deltas: at most one per message in this time, none held longer than it. */
const DELTA_SPACING_MS = 40;
/** The stored text is brought up to date at most, and at least, this often while appends arrive. */
const FLUSH_SPACING_MS = 1000;
/** At most this many appends per message in any RATE_WINDOW_MS. */
export const STREAM_APPENDS_PER_SECOND = 200;
const RATE_WINDOW_MS = 1000;
/** At most this many open streamed messages per agent (the 21st start is 409). */
export const STREAMS_OPEN_MAX = 20;

/** The webhook outbox's part of an end (messages.service.ts's MessageOutbox, for new messages). */
export interface StreamOutbox {
  prepare(messages: readonly Message[]): Promise<{ statements: readonly CompiledQuery[]; committed(): void } | null>;
}

export interface AppendResult {
  length: number;
}

export interface StreamsService {
  /** Text added to an open streamed message by its sender. */
  append(principal: Principal | null, roomId: unknown, messageId: unknown, input: unknown): Promise<AppendResult>;
  /** Its sender ends it: the message as it is now (a tombstone when it has no text at all). */
  end(principal: Principal | null, roomId: unknown, messageId: unknown, input: unknown): Promise<Message>;
  /** The agent's open streamed messages (the limit on starts). */
  openCount(agentId: string): Promise<number>;
  /** A deletion ended it (messages.service.ts): appends after it are 404. */
  deleted(messageId: string): void;
  /** The idle sweep: every node runs it; the conditional end makes each end happen once. */
  startSweep(): void;
  /** Stops the sweep and stores every open message's text (a graceful shutdown loses nothing acknowledged). */
  close(): Promise<void>;
}

/** One open message as the node receiving its appends holds it. */
interface OpenStream {
  id: string;
  roomId: string;
  senderId: string;
  seq: number;
  text: string;
  /** In code points, as the body rules count. */
  length: number;
  closed: 'ended' | 'deleted' | null;
  /** The times of the last STREAM_APPENDS_PER_SECOND appends, a ring. */
  appendTimes: number[];
  appendIndex: number;
  lastAppendAt: number;
  pending: { offset: number; text: string } | null;
  lastDeltaAt: number;
  deltaTimer: NodeJS.Timeout | null;
  storedText: string;
  lastFlushAt: number;
  flushTimer: NodeJS.Timeout | null;
  flushing: Promise<void> | null;
}

const appendInput = compile(AppendMessageInput);
const endInput = compile(EndMessageInput);

export function createStreamsService(deps: {
  db: Kysely<DB>;
  authz: Authz;
  rooms: RoomsService;
  events: EventPublisher;
  presence: PresenceReader;
  outbox?: StreamOutbox;
  idleSeconds: number;
  /** Logs a background failure (a flush or a sweep); never thrown. */
  onError?: (what: string, err: unknown) => void;
}): StreamsService {
  const { db, authz, rooms, events, presence, outbox } = deps;
  const idleMs = deps.idleSeconds * 1000;
  const onError = deps.onError ?? (() => undefined);
  const open = new Map<string, OpenStream>();
  const loading = new Map<string, Promise<OpenStream | null>>();

  const emitDelta = (s: OpenStream): void => {
    if (s.deltaTimer !== null) {
      clearTimeout(s.deltaTimer);
      s.deltaTimer = null;
    }
    const pending = s.pending;
    if (pending === null) return;
    s.pending = null;
    s.lastDeltaAt = Date.now();
    const published = events.publish({ type: 'message.delta', roomId: s.roomId, messageId: s.id, senderId: s.senderId, seq: s.seq, offset: pending.offset, text: pending.text });
    if (published !== undefined) published.catch((err: unknown) => onError('stream delta', err));
  };

  const scheduleDelta = (s: OpenStream): void => {
    if (s.deltaTimer !== null) return;
    const wait = s.lastDeltaAt + DELTA_SPACING_MS - Date.now();
    if (wait <= 0) emitDelta(s);
    else s.deltaTimer = setTimeout(() => emitDelta(s), wait);
  };

  /** The stored text brought up to date (conditional on the message being still open); one write at a time per message. */
  const flush = (s: OpenStream): Promise<void> => {
    if (s.flushTimer !== null) {
      clearTimeout(s.flushTimer);
      s.flushTimer = null;
    }
    if (s.flushing !== null) return s.flushing.then(() => (s.closed === null ? flush(s) : undefined));
    if (s.text === s.storedText) return Promise.resolve();
    const text = s.text;
    s.lastFlushAt = Date.now();
    s.flushing = db.updateTable('messages').set({ body: text, stream_active_at: new Date(s.lastAppendAt).toISOString() })
      .where('id', '=', s.id).where('stream_state', '=', 'open').where('deleted_at', 'is', null).executeTakeFirst()
      .then((result) => {
        s.storedText = text;
        // Ended meanwhile elsewhere (the idle end of another node, a deletion): nothing to hold any more.
        if (Number(result.numUpdatedRows) === 0 && s.closed === null) {
          drop(s, 'ended');
          forget(s);
        }
      }, (err: unknown) => onError('stream flush', err))
      .finally(() => {
        s.flushing = null;
        if (s.closed === null && s.text !== s.storedText) scheduleFlush(s);
      });
    return s.flushing;
  };

  const scheduleFlush = (s: OpenStream): void => {
    if (s.flushTimer !== null || s.flushing !== null) return;
    // The first append after a quiet second is stored at once: the idle end of another node reads its time.
    const wait = s.lastFlushAt + FLUSH_SPACING_MS - Date.now();
    if (wait <= 0) void flush(s);
    else s.flushTimer = setTimeout(() => void flush(s), wait);
  };

  /**
   * Closed at once (appends after it are refused), but kept until its end is committed (`forget`):
   * meanwhile the database still says open, and an append must not load it again.
   */
  const drop = (s: OpenStream, why: 'ended' | 'deleted'): void => {
    s.closed = why;
    if (s.flushTimer !== null) clearTimeout(s.flushTimer);
    if (s.deltaTimer !== null) clearTimeout(s.deltaTimer);
    s.flushTimer = null;
    s.deltaTimer = null;
  };
  const forget = (s: OpenStream): void => {
    if (open.get(s.id) === s) open.delete(s.id);
  };

  /** The message an append or end names, checked in the order the refusals are documented. */
  const lookup = async (actor: Principal, roomId: string, messageId: string): Promise<OpenStream> => {
    const held = open.get(messageId);
    if (held !== undefined && held.roomId === roomId && held.senderId === actor.agentId) {
      requireRoom(actor, roomId);
      return held;
    }
    // A direct room is an unknown room to anyone but its two members.
    if (isDirectRoom(await rooms.get(roomId))) await rooms.assertMember(roomId, actor.agentId);
    requireRoom(actor, roomId);
    if (held !== undefined && held.roomId === roomId) throw forbidden('Only its sender may stream a message');
    let pending = loading.get(messageId);
    if (pending === undefined) {
      pending = findMessageInRoom(db, roomId, messageId).then((message): OpenStream | null => {
        if (message === null || message.deletedAt !== null) return null;
        const again = open.get(messageId);
        if (again !== undefined) return again;
        if (!message.streaming) return { ...blank(message), closed: 'ended' };
        const s = blank(message);
        open.set(s.id, s);
        return s;
      }).finally(() => loading.delete(messageId));
      loading.set(messageId, pending);
    }
    const s = await pending;
    if (s === null || s.roomId !== roomId || s.closed === 'deleted') throw notFound('Message');
    if (s.senderId !== actor.agentId) throw forbidden('Only its sender may stream a message');
    return s;
  };

  const blank = (message: Message): OpenStream => ({
    id: message.id, roomId: message.roomId, senderId: message.senderId, seq: message.seq,
    text: message.body, length: codePointLength(message.body), closed: null,
    appendTimes: [], appendIndex: 0, lastAppendAt: Date.now(),
    pending: null, lastDeltaAt: 0, deltaTimer: null,
    storedText: message.body, lastFlushAt: 0, flushTimer: null, flushing: null,
  });

  const refuseClosed = (s: OpenStream): never => {
    if (s.closed === 'deleted') throw notFound('Message');
    throw conflict('The message is not open: it was sent whole or has ended');
  };

  /** What attention.ts needs, read before the end's transaction (as a send reads it). */
  const attentionCauses = async (message: Message): Promise<AttentionCauses> => {
    const causes: AttentionCauses = {};
    if (message.replyTo !== undefined) {
      const repliedTo = await findMessageInRoom(db, message.roomId, message.replyTo);
      causes.replyToSender = repliedTo?.senderId ?? null;
      const rootId = repliedTo === null ? null : threadRootOf(repliedTo);
      if (rootId !== null && rootId !== repliedTo?.id) causes.threadRootSender = (await findMessageInRoom(db, message.roomId, rootId))?.senderId ?? null;
    }
    if (isDirectRoom(await rooms.get(message.roomId))) causes.directMembers = await listMemberIds(db, message.roomId);
    return causes;
  };

  /**
   * The end, whoever causes it: one transaction, conditional on the message being open (and, for
   * the idle end, still idle), so it happens once whatever node tries. Null: it was not open any more.
   */
  const finish = async (messageId: string, roomId: string, how: StreamEnd, change: { body?: string; data?: Record<string, unknown> | null; idleBefore?: string }): Promise<Message | null> => {
    const before = await findMessageInRoom(db, roomId, messageId);
    if (before === null || !before.streaming || before.deletedAt !== null) return null;
    await withAttachments(db, [before]);
    const body = change.body ?? before.body;
    const now = nowIso();
    const empty = body === '';
    const after: Message = empty
      ? { ...before, body: '', mentions: [], data: null, attachments: [], deletedAt: now, streaming: false, streamEnd: 'complete' }
      : { ...before, body, data: change.data !== undefined ? change.data : before.data, streaming: false, streamEnd: how };
    if (!empty) decideAttention(after, await attentionCauses(after));
    // message.created (or .attention) webhooks with the final text; none for a message that never had any.
    const outboxWrites = !empty && outbox ? await outbox.prepare([after]) : null;
    const done = await db.transaction().execute(async (trx) => {
      await dialectOf(trx).lockKey(trx, `message:${messageId}`);
      let update = trx.updateTable('messages').where('id', '=', messageId).where('stream_state', '=', 'open').where('deleted_at', 'is', null);
      if (change.idleBefore !== undefined) update = update.where('stream_active_at', '<', change.idleBefore);
      const result = await (empty
        ? update.set({ body: '', mentions: '[]', data: null, deleted_at: now, stream_state: 'complete', stream_active_at: null })
        : update.set({ body, data: after.data === null ? null : JSON.stringify(after.data), stream_state: how, stream_active_at: null })).executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) return false;
      if (empty) {
        await removeAttachments(trx, messageId);
        return true;
      }
      const entry = searchEntryStatement(trx, messageId, searchText(body));
      if (entry !== null) await trx.executeQuery(entry);
      const attention = attentionOf(after);
      if (attention.length > 0) {
        await trx.insertInto('message_attention').values(attention.map((agentId) => ({ agent_id: agentId, room_id: roomId, seq: after.seq, message_id: messageId }))).execute();
      }
      for (const statement of outboxWrites?.statements ?? []) await trx.executeQuery(statement);
      return true;
    });
    if (!done) return null;
    outboxWrites?.committed();
    await events.publish(empty ? { type: 'message.deleted', message: after, actorId: after.senderId } : { type: 'message.updated', message: after, actorId: after.senderId });
    return after;
  };

  // ------------------------------------------------------------------ the idle sweep
  let sweepTimer: NodeJS.Timeout | null = null;
  let sweeping: Promise<void> | null = null;
  /** WebSocket-started messages whose sender this node saw without a socket, since when. */
  const offlineSince = new Map<string, number>();

  const sweep = async (): Promise<void> => {
    const now = Date.now();
    const cutoff = new Date(now - idleMs).toISOString();
    const rows = await db.selectFrom('messages').select(['id', 'room_id', 'sender_id', 'stream_active_at', 'stream_via'])
      .where('stream_state', '=', 'open').where((eb) => eb.or([eb('stream_active_at', '<', cutoff), eb('stream_via', '=', 'ws')]))
      .limit(500).execute();
    const wsSenders = [...new Set(rows.filter((r) => r.stream_via === 'ws').map((r) => r.sender_id))];
    const online = wsSenders.length === 0 ? new Set<string>() : await presence.onlineAgents(wsSenders).catch(() => new Set(wsSenders));
    const seen = new Set<string>();
    for (const row of rows) {
      seen.add(row.id);
      const held = open.get(row.id);
      const activeAt = row.stream_active_at === null ? 0 : new Date(row.stream_active_at).getTime();
      let idle = activeAt < now - idleMs && (held === undefined || held.lastAppendAt < now - idleMs);
      let condition: string | undefined = cutoff;
      if (!idle && row.stream_via === 'ws') {
        if (online.has(row.sender_id)) offlineSince.delete(row.id);
        else {
          const since = offlineSince.get(row.id) ?? now;
          offlineSince.set(row.id, since);
          if (since <= now - idleMs) {
            idle = true;
            condition = undefined;
          }
        }
      }
      if (!idle) continue;
      // This node's text is the newest: stored first, then the end takes it.
      if (held !== undefined) {
        emitDelta(held);
        await flush(held);
        drop(held, 'ended');
      }
      offlineSince.delete(row.id);
      await finish(row.id, row.room_id, 'interrupted', condition === undefined ? {} : { idleBefore: condition })
        .catch((err: unknown) => onError('stream idle end', err));
      if (held !== undefined) forget(held);
    }
    for (const id of offlineSince.keys()) if (!seen.has(id)) offlineSince.delete(id);
    // Held streams that another node ended (idle) long ago: nothing will come for them.
    for (const s of [...open.values()]) {
      if (s.lastAppendAt < now - 2 * idleMs - FLUSH_SPACING_MS) {
        drop(s, 'ended');
        forget(s);
      }
    }
  };

  const sweepEvery = Math.max(250, Math.min(1000, idleMs / 4));

  return {
    async append(principal, rawRoomId, rawMessageId, input) {
      const actor = authz.requireAgent(principal, 'messages:write');
      const roomId = parseId(rawRoomId, 'roomId');
      const messageId = parseId(rawMessageId, 'messageId');
      const { text } = appendInput.parse(requireObject(input));
      const s = await lookup(actor, roomId, messageId);
      // From here on synchronous: appends are applied in the order they got here.
      if (s.closed !== null) refuseClosed(s);
      const now = Date.now();
      const oldest = s.appendTimes.length < STREAM_APPENDS_PER_SECOND ? undefined : s.appendTimes[s.appendIndex];
      if (oldest !== undefined && oldest > now - RATE_WINDOW_MS) {
        throw new AppError('RATE_LIMITED', `At most ${STREAM_APPENDS_PER_SECOND} appends per message per second`);
      }
      const added = codePointLength(text);
      if (s.length + added > MESSAGE_BODY_MAX) {
        throw validationError({ text: `the body may not pass ${MESSAGE_BODY_MAX} characters (it has ${s.length}, the append ${added})` });
      }
      const offset = s.length;
      s.text += text;
      s.length += added;
      s.appendTimes[s.appendIndex] = now;
      s.appendIndex = (s.appendIndex + 1) % STREAM_APPENDS_PER_SECOND;
      s.lastAppendAt = now;
      if (s.pending === null) s.pending = { offset, text };
      else s.pending.text += text;
      scheduleDelta(s);
      scheduleFlush(s);
      return { length: s.length };
    },

    async end(principal, rawRoomId, rawMessageId, input) {
      const actor = authz.requireAgent(principal, 'messages:write');
      const roomId = parseId(rawRoomId, 'roomId');
      const messageId = parseId(rawMessageId, 'messageId');
      const raw = requireObject(input);
      const fields = endInput.parse(raw);
      let data: Record<string, unknown> | null | undefined;
      if (raw.data !== undefined) {
        data = (raw.data ?? null) as Record<string, unknown> | null;
        if (data !== null) {
          const checked = checkMessageData(data);
          if ('problem' in checked) throw validationError({ data: checked.problem });
        }
      }
      const s = await lookup(actor, roomId, messageId);
      if (s.closed !== null) refuseClosed(s);
      // Closed at once: an append after this point is refused; every one before is in the text below.
      emitDelta(s);
      drop(s, 'ended');
      const body = fields.body ?? s.text;
      let ended: Message | null;
      try {
        ended = await finish(messageId, roomId, 'complete', { body, ...(data !== undefined ? { data } : {}) });
      } catch (err) {
        // Not ended (the database failed): open again, its text kept.
        s.closed = null;
        scheduleFlush(s);
        throw err;
      }
      forget(s);
      if (ended === null) {
        const now = await findMessageInRoom(db, roomId, messageId);
        if (now === null || now.deletedAt !== null) throw notFound('Message');
        throw conflict('The message is not open: it was sent whole or has ended');
      }
      return ended;
    },

    async openCount(agentId) {
      const row = await db.selectFrom('messages').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('sender_id', '=', agentId).where('stream_state', '=', 'open').executeTakeFirst();
      return Number(row?.n ?? 0);
    },

    deleted(messageId) {
      const s = open.get(messageId);
      if (s === undefined) return;
      drop(s, 'deleted');
      // Kept a while so that appends racing the deletion's commit are 404, not loaded again.
      setTimeout(() => forget(s), 10_000).unref();
    },

    startSweep() {
      if (sweepTimer !== null) return;
      sweepTimer = setInterval(() => {
        if (sweeping !== null) return;
        sweeping = sweep().catch((err: unknown) => onError('stream sweep', err)).finally(() => {
          sweeping = null;
        });
      }, sweepEvery);
      sweepTimer.unref();
    },

    async close() {
      if (sweepTimer !== null) clearInterval(sweepTimer);
      sweepTimer = null;
      await sweeping;
      for (const s of [...open.values()]) {
        emitDelta(s);
        await flush(s);
        if (s.flushTimer !== null) clearTimeout(s.flushTimer);
        if (s.deltaTimer !== null) clearTimeout(s.deltaTimer);
      }
    },
  };
}
