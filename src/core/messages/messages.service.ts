import type { CompiledQuery, Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { conflict, forbidden, notFound, validationError } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { createWriteBatcher } from '../../store/write-batcher.js';
import type { AuditEntry } from '../audit/audit.store.js';
import { deletesMessage, editsMessage, requireRoom, type Authz } from '../authz/authz.js';
import type { EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { findLastSeq, listMemberIds } from '../rooms/rooms.store.js';
import { parsePageCursor, parsePageLimit } from '../paging.js';
import { compile, parseId, parseSeq, requireObject } from '../validation.js';
import { decideAttention, isDirectRoom, threadRootOf, type AttentionCauses } from './attention.js';
import type { Message } from './message.js';
import { ATTACHMENTS_MAX, EditMessageInput, HISTORY_LIMITS, MENTIONS_MAX, SendMessageInput, checkMessageData, isUuid } from '@agent-messaging/protocol';
import { attachmentStatements, findAttachable, removeAttachments, withAttachments } from './attachments.store.js';
import type { MessageTask } from './message.js';
import { batchWrites } from './batch-writes.js';
import { findByClientMsgId, findMessageInRoom, lockCurrentBody, pageMessages, pageThreadReplies, rememberDataJson, tombstoneMessage, updateMessageBody } from './messages.store.js';
import { recordAudit } from '../audit/audit.store.js';
import { removeSearchEntry, searchEntryStatement } from './search-entries.store.js';
import { searchText } from '../search-text.js';
import { numberMessages, pageAfterSeq, type RoomCounter } from './seq.store.js';
import { parseAfterSeq } from './sync.js';


export interface HistoryQuery {
  /** Exclusive: messages older than this id. `cursor` is accepted as the same thing. */
  before?: unknown;
  cursor?: unknown;
  limit?: unknown;
}

export interface HistoryPage {
  messages: Message[];
  /** Id of the oldest message on the page; null when the page is empty. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface SyncQuery {
  /** Required: the last `seq` the client has; the page starts after it. */
  afterSeq?: unknown;
  limit?: unknown;
  /** Refused together with afterSeq (they page the other way). */
  before?: unknown;
  cursor?: unknown;
}

export interface SyncPage {
  /** Oldest first. */
  messages: Message[];
  /** The room's latest `seq`. */
  lastSeq: number;
  /** Whether messages after this page exist (up to lastSeq). */
  hasMore: boolean;
}

export interface ThreadQuery {
  /** Replies with a greater seq (default 0). */
  afterSeq?: unknown;
  limit?: unknown;
}

export interface ThreadPage {
  root: Message;
  /** Oldest first. */
  replies: Message[];
  hasMore: boolean;
}

/** What a task's creation or move adds to its message (docs/tasks.md); never from the wire. */
export interface TaskPost {
  /** Chosen by the task service, so that the history entry written with the move names it. */
  messageId: string;
  task: MessageTask;
  /** The assignee, when the requester sends it: the message is for its attention. */
  attentionOf?: string;
  /**
   * The task's own writes (its row, its history entry, its audit record): committed in the
   * message's transaction, after its statements, so that the message and the move are stored both
   * or neither (docs/tasks.md, "A move is one commit"). Any of them failing (a unique violation: a
   * concurrent move came first) fails the send with its error, and nothing of either is written.
   */
  statements: readonly CompiledQuery[];
  /** The task's requester and assignee, for the webhook outbox's `task.updated` (its row may be written by this very commit). */
  parties: readonly string[];
}

/** One send in the group commit: its message, and the task it is posted for (its writes share the transaction). */
interface QueuedSend {
  message: Message;
  post: TaskPost | undefined;
}

export interface SendResult {
  message: Message;
  /** False when a clientMsgId repeat returned the original message. */
  created: boolean;
}

export interface MessagesService {
  send(principal: Principal | null, roomId: unknown, input: unknown): Promise<SendResult>;
  /**
   * `send` in two steps: resolves once the message is validated and queued for its group commit;
   * `committed` then settles as `send` would. Messages submitted one after the other (the next
   * submitted once the previous resolved) are stored, numbered and published in that order, so a
   * connection can pipeline its sends without reordering them.
   */
  submit(principal: Principal | null, roomId: unknown, input: unknown, post?: TaskPost): Promise<{ committed: Promise<SendResult> }>;
  /** The message a task's creation or move posts (core/tasks/): a send, with the task on it and the task's writes in its commit. */
  sendForTask(principal: Principal, roomId: string, input: unknown, post: TaskPost): Promise<SendResult>;
  /** A send's `data` and `attachments` checked as a send checks them (a task's message, before the task moves). */
  checkExtras(senderId: string, input: Record<string, unknown>, prefix: string): Promise<void>;
  history(principal: Principal | null, roomId: unknown, query: HistoryQuery): Promise<HistoryPage>;
  /** Forward catch-up (`afterSeq`): authorised like history. */
  sync(principal: Principal | null, roomId: unknown, query: SyncQuery): Promise<SyncPage>;
  /** A thread (docs/threads-and-edits.md): `messageId` its root or any reply; authorised like history. */
  thread(principal: Principal | null, roomId: unknown, messageId: unknown, query: ThreadQuery): Promise<ThreadPage>;
  /** Its sender edits a message's body (docs/threads-and-edits.md): the message as it is now. */
  edit(principal: Principal | null, roomId: unknown, messageId: unknown, input: unknown): Promise<Message>;
  /** Its sender (or an admin) deletes a message: it stays as a tombstone. */
  remove(principal: Principal | null, roomId: unknown, messageId: unknown): Promise<void>;
}

/** The outbox's part of a group commit: its statements, and what to do once they are committed. */
export interface OutboxWrites {
  statements: readonly CompiledQuery[];
  committed(): void;
}

/**
 * What else a send's transaction writes (the webhook outbox): committed or rolled back with the
 * messages. `prepare` reads what it needs before the transaction and returns its statements.
 */
export interface MessageOutbox {
  /**
   * `change`: an edit or a deletion by `actorId` (absent: new messages, from their senders).
   * `taskParties`: for new messages posted for tasks, each task's requester and assignee, by task id.
   */
  prepare(
    messages: readonly Message[],
    change?: { event: 'message.updated' | 'message.deleted'; actorId: string },
    taskParties?: ReadonlyMap<string, readonly string[]>,
  ): Promise<OutboxWrites | null>;
}

const sendInput = compile(SendMessageInput);
const editInput = compile(EditMessageInput);

/**
 * Group commits are spaced by COMMIT_SPACING_MS while sends arrive at SPACED_FROM_RATE per second or
 * more (write-batcher.ts): below that rate a send commits at once (delivery close to the
 * transport's); above it a batch's fixed costs are shared by several sends (scenario 1's
 * CPU per message; measured in docs/benchmarks.md).
 */
const COMMIT_SPACING_MS = 4;
const SPACED_FROM_RATE = 1000;

/** JSON with object keys sorted: PostgreSQL's jsonb gives keys back in an order of its own. */
const canonicalJson = (value: unknown): string => JSON.stringify(value, (_key, v: unknown) =>
  (typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));

/** A retry carries the same body, mentions, replyTo, data and attachments; anything else reusing the id is a conflict. */
function sameContent(a: Message, b: Message): boolean {
  const mentions = (m: Message): string => [...(m.mentions ?? [])].sort().join(',');
  const files = (m: Message): string => m.attachments.map((f) => f.id).join(',');
  return a.body === b.body && (a.replyTo ?? null) === (b.replyTo ?? null) && mentions(a) === mentions(b)
    && files(a) === files(b) && canonicalJson(a.data) === canonicalJson(b.data);
}

/**
 * A send's `attachments` (docs/protocol.md, Messages): at most ATTACHMENTS_MAX distinct file ids
 * (lowercased), each checked against the files table by the caller. Absent or null: none.
 */
function parseAttachmentIds(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw validationError({ [field]: 'must be an array of file ids' });
  if (value.length > ATTACHMENTS_MAX) throw validationError({ [field]: `must have at most ${ATTACHMENTS_MAX} items` });
  if (!value.every(isUuid)) throw validationError({ [field]: 'must hold file ids (UUIDs)' });
  const ids = value.map((id) => id.toLowerCase());
  if (new Set(ids).size !== ids.length) throw validationError({ [field]: 'must not name a file twice' });
  return ids;
}

export function createMessagesService(deps: { db: Kysely<DB>; authz: Authz; rooms: RoomsService; events: EventPublisher; outbox?: MessageOutbox }): MessagesService {
  const { db, authz, rooms, events, outbox } = deps;
  // Messages and their audit records are written in group commits: one short transaction for the
  // sends that arrive together, each acknowledged after its commit. At moderate rates a send commits
  // at the end of the event-loop turn that received it (sends that arrive while a commit runs share
  // the next one); while sends arrive fast, commits are spaced (COMMIT_SPACING_MS above). The search
  // index is written in the same transaction: a message is searchable once its send is
  // acknowledged. Nothing in the transaction waits for a read: on SQLite the whole batch is one
  // round trip to the writer thread (write-batcher.ts).
  const writes = createWriteBatcher<QueuedSend, OutboxWrites | null>(db, {
    prepare: (sends) => (outbox
      ? outbox.prepare(sends.map((s) => s.message), undefined, new Map(sends.flatMap(({ post }) => (post === undefined ? [] : [[post.task.id, post.parties]]))))
      : Promise.resolve(null)),
    write(db, sends, outboxWrites) {
      const messages = sends.map((s) => s.message);
      const tasks = sends.flatMap((s) => s.post?.statements ?? []);
      // Numbered in this transaction (a retried batch numbers again), so seq follows the commit order.
      const numbering = numberMessages(db, messages);
      const audit = messages.map((message): AuditEntry => ({ event: 'message-sent', actorId: message.senderId, subjectId: message.id, detail: { roomId: message.roomId } }));
      // Attachment rows share the transaction: on PostgreSQL that takes the statements' path.
      const attached = attachmentStatements(db, messages);
      const writes = batchWrites(db, messages, numbering, audit, (outboxWrites?.statements.length ?? 0) > 0 || attached.length > 0 || tasks.length > 0);
      if ('alone' in writes) return { statements: [], lastRead: { query: writes.alone, committed: numbering.lastRead.committed } };
      const { statements } = writes;
      statements.push(...attached);
      if (outboxWrites) statements.push(...outboxWrites.statements);
      // Last: a task's move after its message's writes (a crash test pauses between the two). Two
      // commits touching one task both bump its room's counter first, so they never deadlock on it.
      statements.push(...tasks);
      const { query, committed } = numbering.lastRead;
      return {
        statements,
        lastRead: {
          query,
          committed(rows: readonly RoomCounter[]) {
            committed(rows);
            outboxWrites?.committed();
          },
        },
      };
    },
  }, { minIntervalMs: COMMIT_SPACING_MS, spaceFromRate: SPACED_FROM_RATE });

  /** What attention.ts needs besides the message: read before the write, never inside it. */
  const attentionCauses = async (roomId: string, direct: boolean, repliedTo: Message | null): Promise<AttentionCauses> => {
    const causes: AttentionCauses = {};
    if (repliedTo) {
      causes.replyToSender = repliedTo.senderId;
      const rootId = threadRootOf(repliedTo);
      if (rootId !== null && rootId !== repliedTo.id) causes.threadRootSender = (await findMessageInRoom(db, roomId, rootId))?.senderId ?? null;
    }
    if (direct) causes.directMembers = await listMemberIds(db, roomId);
    return causes;
  };

  /** A send's `data` and `attachments`, checked (docs/protocol.md, Messages); errors name `prefix` + the field. */
  const checkExtras = async (senderId: string, raw: Record<string, unknown>, prefix = ''): Promise<{ data: unknown; attachments: Message['attachments'] }> => {
    const data = raw.data ?? null;
    if (data !== null) {
      const checked = checkMessageData(data);
      if ('problem' in checked) throw validationError({ [`${prefix}data`]: checked.problem });
      rememberDataJson(data as object, checked.json);
    }
    const ids = parseAttachmentIds(raw.attachments, `${prefix}attachments`);
    const attachments = ids.length === 0 ? [] : await findAttachable(db, senderId, ids);
    if (attachments === null) throw validationError({ [`${prefix}attachments`]: 'must be ids of completed files you uploaded' });
    return { data, attachments };
  };

  const submit: MessagesService['submit'] = async (principal, rawRoomId, input, post) => {
    const sender = authz.requireAgent(principal, 'messages:write');
    const roomId = parseId(rawRoomId, 'roomId');
    const raw = requireObject(input);
    // data and attachments first, so that their errors name the field itself (not an item of it).
    const { data, attachments } = await checkExtras(sender.agentId, raw);
    const fields = sendInput.parse(raw);
    const direct = (await rooms.assertMember(roomId, sender.agentId)) === 'direct';
    requireRoom(sender, roomId);

    // docs/protocol.md, Mentions: a repeated id counts once; at most MENTIONS_MAX, each a member.
    const mentions = fields.mentions ? [...new Set(fields.mentions.map((m) => m.toLowerCase()))] : undefined;
    if (mentions !== undefined && mentions.length > MENTIONS_MAX) {
      throw validationError({ mentions: `must name at most ${MENTIONS_MAX} distinct agents` });
    }
    if (mentions !== undefined) {
      const outsiders = await rooms.nonMembers(roomId, mentions);
      // The published rule (docs/protocol.md): a mention of anyone not a member, an id of no agent
      // included, is 400 details.mentions. MCP, which takes names, answers NOT_FOUND for a name or id of no agent first.
      if (outsiders.length > 0) throw validationError({ mentions: `not members of this room: ${outsiders.join(', ')}` });
    }

    const replyTo = fields.replyTo?.toLowerCase();
    let threadId: string | null = null;
    const repliedTo = replyTo === undefined ? null : await findMessageInRoom(db, roomId, replyTo);
    if (replyTo !== undefined) {
      if (!repliedTo || repliedTo.deletedAt !== null) throw validationError({ replyTo: 'must be the id of a message in this room that is not deleted' });
      // A thread is flat: replying to a reply continues its root's thread.
      threadId = repliedTo.threadId ?? repliedTo.id;
    }
    // `seq` is set by the write, inside its transaction.
    const message: Message = {
      id: post?.messageId ?? uuidv7(), roomId, senderId: sender.agentId, body: fields.body, createdAt: nowIso(), seq: 0, threadId, editedAt: null, deletedAt: null,
      data: data as Record<string, unknown> | null, attachments, task: post?.task ?? null,
    };
    if (threadId === null) {
      message.replyCount = 0;
      message.lastReplyAt = null;
    }
    if (mentions !== undefined) message.mentions = mentions;
    if (replyTo !== undefined) message.replyTo = replyTo;
    if (fields.clientMsgId !== undefined) message.clientMsgId = fields.clientMsgId;
    // Most sends have no cause to read: they spare the call and its await.
    const causes = direct || repliedTo !== null ? await attentionCauses(roomId, direct, repliedTo) : {};
    // A task's message is for its assignee's attention when the requester sent it (docs/tasks.md).
    if (post?.attentionOf !== undefined) causes.taskAssignee = post.attentionOf;
    const attention = decideAttention(message, causes);

    // Idempotency lives in the database (unique index on room, sender, clientMsgId), so a repeat
    // is recognised across restarts and across nodes, and is never stored or broadcast twice.
    const repeat = async (): Promise<SendResult | null> => {
      if (message.clientMsgId === undefined) return null;
      const original = await findByClientMsgId(db, roomId, sender.agentId, message.clientMsgId);
      if (!original) return null;
      await withAttachments(db, [original]);
      if (!sameContent(original, message)) throw conflict('clientMsgId was already used for a different message');
      return { message: original, created: false };
    };

    const earlier = message.clientMsgId === undefined ? null : await repeat();
    if (earlier) return { committed: Promise.resolve(earlier) };
    // Queued now, synchronously: the order of submits is the order in the batch (and of seq).
    const committed = writes.write({ message, post }).then(
      (): SendResult | Promise<SendResult> => {
        const sent: SendResult = { message, created: true };
        const published = events.publish({ type: 'message.created', message, attention });
        return published === undefined ? sent : published.then(() => sent);
      },
      async (err: unknown): Promise<SendResult> => {
        // Two concurrent sends with one clientMsgId: the loser returns the winner's message.
        if (isUniqueViolation(err)) {
          const original = await repeat();
          if (original) return original;
        }
        throw err;
      },
    );
    return { committed };
  };

  /**
   * An edit's or a deletion's writes, in one transaction: the message, its search entry, the audit
   * record and the webhook deliveries (read before it, as a send's are). Null: the message was
   * deleted meanwhile.
   */
  const change = async (
    before: Message, after: Message, event: 'message.updated' | 'message.deleted', actorId: string,
    write: (trx: Kysely<DB>) => Promise<boolean>,
  ): Promise<Message> => {
    const outboxWrites = outbox ? await outbox.prepare([after], { event, actorId }) : null;
    const done = await db.transaction().execute(async (trx) => {
      // The body as committed now, not as read before: a concurrent edit may have changed it.
      const current = await lockCurrentBody(trx, before.id);
      if (current === null || !(await write(trx))) return false;
      await removeSearchEntry(trx, before.id, searchText(current));
      const entry = searchEntryStatement(trx, after.id, searchText(after.body));
      if (entry !== null) await trx.executeQuery(entry);
      await recordAudit(trx, { event: event === 'message.updated' ? 'message-edited' : 'message-deleted', actorId, subjectId: after.id, detail: { roomId: after.roomId } });
      for (const statement of outboxWrites?.statements ?? []) await trx.executeQuery(statement);
      return true;
    });
    if (!done) throw notFound('Message');
    outboxWrites?.committed();
    await events.publish({ type: event, message: after, actorId });
    return after;
  };

  /** The message an edit or deletion names: 404 for an unknown room or message, or a deleted one. */
  const target = async (principal: Principal | null, rawRoomId: unknown, rawMessageId: unknown) => {
    const actor = authz.requireAgent(principal, 'messages:write');
    const roomId = parseId(rawRoomId, 'roomId');
    const messageId = parseId(rawMessageId, 'messageId');
    // A direct room is an unknown room to anyone but its two members, admins included.
    if (isDirectRoom(await rooms.get(roomId))) await rooms.assertMember(roomId, actor.agentId);
    requireRoom(actor, roomId);
    const message = await findMessageInRoom(db, roomId, messageId);
    if (!message || message.deletedAt !== null) throw notFound('Message');
    await withAttachments(db, [message]);
    return { actor, message };
  };

  return {
    submit,

    async edit(principal, rawRoomId, rawMessageId, input) {
      const { body } = editInput.parse(requireObject(input));
      const { actor, message } = await target(principal, rawRoomId, rawMessageId);
      if (!editsMessage(actor, message.senderId)) throw forbidden('Only its sender may edit a message');
      const editedAt = nowIso();
      const after: Message = { ...message, body, editedAt };
      return change(message, after, 'message.updated', actor.agentId, (trx) => updateMessageBody(trx, message.id, body, editedAt));
    },

    async remove(principal, rawRoomId, rawMessageId) {
      const { actor, message } = await target(principal, rawRoomId, rawMessageId);
      if (!(await deletesMessage(actor, message.senderId, async () => (await rooms.get(message.roomId)).kind))) throw forbidden('Only its sender, or an admin in a group room, may delete a message');
      const deletedAt = nowIso();
      const after: Message = { ...message, body: '', mentions: [], data: null, attachments: [], deletedAt };
      await change(message, after, 'message.deleted', actor.agentId, async (trx) => {
        if (!(await tombstoneMessage(trx, message.id, deletedAt))) return false;
        await removeAttachments(trx, message.id);
        return true;
      });
    },

    async send(principal, rawRoomId, input) {
      return (await submit(principal, rawRoomId, input)).committed;
    },

    async checkExtras(senderId, input, prefix) {
      await checkExtras(senderId, input, prefix);
    },

    async sendForTask(principal, roomId, input, post) {
      return (await submit(principal, roomId, input, post)).committed;
    },

    async history(principal, rawRoomId, query) {
      const reader = authz.requireAgent(principal, 'messages:read');
      const roomId = parseId(rawRoomId, 'roomId');
      const limit = parsePageLimit(query.limit, HISTORY_LIMITS);
      const { before, field } = parsePageCursor(query);
      await rooms.assertReadable(roomId, reader.agentId);
      requireRoom(reader, roomId);
      if (before !== null && !(await findMessageInRoom(db, roomId, before))) {
        throw validationError({ [field]: 'is not the id of a message in this room' });
      }
      const { messages, hasMore } = await pageMessages(db, roomId, before, limit);
      return { messages, hasMore, nextCursor: messages.length > 0 ? messages[messages.length - 1]!.id : null };
    },

    async sync(principal, rawRoomId, query) {
      const reader = authz.requireAgent(principal, 'messages:read');
      const roomId = parseId(rawRoomId, 'roomId');
      const afterSeq = parseAfterSeq(query);
      const limit = parsePageLimit(query.limit, HISTORY_LIMITS);
      await rooms.assertReadable(roomId, reader.agentId);
      requireRoom(reader, roomId);
      // lastSeq first: every seq up to it is committed, so the page below has no hole.
      const lastSeq = (await findLastSeq(db, roomId)) ?? 0;
      const { messages, hasMore } = await pageAfterSeq(db, roomId, afterSeq, lastSeq, limit);
      return { messages, lastSeq, hasMore };
    },

    async thread(principal, rawRoomId, rawMessageId, query) {
      const reader = authz.requireAgent(principal, 'messages:read');
      const roomId = parseId(rawRoomId, 'roomId');
      const messageId = parseId(rawMessageId, 'messageId');
      const afterSeq = query.afterSeq === undefined || query.afterSeq === null || query.afterSeq === '' ? 0 : parseSeq(query.afterSeq, 'afterSeq');
      const limit = parsePageLimit(query.limit, HISTORY_LIMITS);
      // As history: a direct room's threads are its members' only (an unknown room to anyone else).
      await rooms.assertReadable(roomId, reader.agentId);
      requireRoom(reader, roomId);
      const named = await findMessageInRoom(db, roomId, messageId);
      if (!named) throw notFound('Message');
      const root = named.threadId === null ? named : await findMessageInRoom(db, roomId, named.threadId);
      // A root is never removed (deletion leaves a tombstone), so a reply's root exists.
      if (!root) throw notFound('Message');
      const { replies, hasMore } = await pageThreadReplies(db, root.id, afterSeq, limit);
      await withAttachments(db, [root, ...replies]);
      return { root, replies, hasMore };
    },
  };
}
