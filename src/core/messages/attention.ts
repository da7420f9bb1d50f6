import { sql, type CompiledQuery } from 'kysely';
import { prepared } from '../../store/prepared.js';
import type { Db } from '../../store/schema.js';
import type { Message } from './message.js';

/**
 * Attention (docs/protocol.md, Attention): a message is for the attention of agent X when X did
 * not send it and X is in its mentions, or its room is direct, or it replies in a thread whose
 * root X sent, or its replyTo names a message X sent, or it carries a task assigned to X, or it is
 * urgent, or X must acknowledge it (docs/acknowledgements.md; an acknowledgement removes X's row).
 *
 * Who a message is for is decided once, when it is sent, and written with it (table
 * `message_attention`, migration 011) in its group commit: counts and the attention inbox read that
 * table by its key (agent, room, seq > read_seq). The list travels with the message in memory
 * (`attentionOf`) to the write, the webhook outbox and the inbox waiters (through the event bridge).
 */

/** The other causes, each known before the message is written. */
export interface AttentionCauses {
  /** The sender of the message `replyTo` names, when there is one. */
  replyToSender?: string | null;
  /** The sender of the root of the thread the message replies in (threads: docs/protocol.md). */
  threadRootSender?: string | null;
  /** The other members of a direct room (empty for a group room). */
  directMembers?: readonly string[];
  /** The agent a task the message carries is assigned to (tasks: to come; the hook is here). */
  taskAssignee?: string | null;
  /** An urgent message's room members, or those who must acknowledge it (docs/acknowledgements.md). */
  urgentFor?: readonly string[];
  ackFrom?: readonly string[];
}

/**
 * Whether the room is a direct room (docs/protocol.md, Direct rooms): read from the room's `kind`,
 * which rooms carry once direct rooms exist; a room without one is a group room.
 */
export const isDirectRoom = (room: object): boolean => (room as { kind?: unknown }).kind === 'direct';

/**
 * The root of the thread a message is in, when it is a reply (its `threadId`, which messages carry
 * once threads exist: docs/protocol.md, Threads); null otherwise.
 */
export const threadRootOf = (message: Message): string | null => {
  const threadId = (message as { threadId?: unknown }).threadId;
  return typeof threadId === 'string' ? threadId : null;
};

const recipients = new WeakMap<Message, readonly string[]>();

const NOBODY: readonly string[] = Object.freeze([]);

/**
 * Decides who `message` is for the attention of, and keeps it with the message. Most messages are
 * for nobody's: they build and keep nothing (that was 3 % of the main thread's profile at
 * 4,000 msg/s, bench/profile.js).
 */
export function decideAttention(message: Message, causes: AttentionCauses): readonly string[] {
  if (message.mentions === undefined && causes.directMembers === undefined && !causes.replyToSender && !causes.threadRootSender && !causes.taskAssignee
    && causes.urgentFor === undefined && causes.ackFrom === undefined) return NOBODY;
  const agents = new Set<string>(message.mentions ?? []);
  for (const agentId of causes.directMembers ?? []) agents.add(agentId);
  for (const agentId of causes.urgentFor ?? []) agents.add(agentId);
  for (const agentId of causes.ackFrom ?? []) agents.add(agentId);
  for (const agentId of [causes.replyToSender, causes.threadRootSender, causes.taskAssignee]) if (agentId) agents.add(agentId);
  agents.delete(message.senderId);
  if (agents.size === 0) return NOBODY;
  const list = [...agents];
  recipients.set(message, list);
  return list;
}

/** Who the message is for the attention of (empty when nobody, or when it was not sent here). */
export const attentionOf = (message: Message): readonly string[] => recipients.get(message) ?? NOBODY;

const insertAttentionQuery = prepared((db, p: { agent_id: string; room_id: string; message_id: string; seq_from_end: number }) =>
  db.insertInto('message_attention').values((eb) => ({
    agent_id: p.agent_id,
    room_id: p.room_id,
    message_id: p.message_id,
    seq: eb(eb.selectFrom('rooms').select('last_seq').where('id', '=', p.room_id), '-', p.seq_from_end).$notNull(),
  })),
);

/**
 * The rows of a batch, for its transaction after the rooms' counters were bumped (`fromEnd[i]` is
 * message i's, as for the message's own insert): one compiled-once statement per row (SQLite), or
 * one multi-row statement (PostgreSQL, when the batch is several statements).
 */
export function attentionStatements(db: Db, messages: readonly Message[], fromEnd: readonly number[], oneStatement: boolean): CompiledQuery[] {
  const rows = messages.flatMap((m, i) => attentionOf(m).map((agentId) => ({ agent_id: agentId, room_id: m.roomId, message_id: m.id, seq_from_end: fromEnd[i]! })));
  if (rows.length === 0) return [];
  if (!oneStatement) return rows.map((row) => insertAttentionQuery.compile(db, row));
  return [db.insertInto('message_attention').values(rows.map((r) => ({
    agent_id: r.agent_id,
    room_id: r.room_id,
    message_id: r.message_id,
    seq: sql<number>`(select last_seq from rooms where id = ${r.room_id}) - ${r.seq_from_end}`,
  }))).compile()];
}

/** The batch's rows as the columns of PostgreSQL's one-statement batch (messages.store.ts). */
export function attentionColumns(messages: readonly Message[], fromEnd: readonly number[]): { agents: string[]; rooms: string[]; messageIds: string[]; fromEnd: number[] } {
  const out = { agents: [] as string[], rooms: [] as string[], messageIds: [] as string[], fromEnd: [] as number[] };
  messages.forEach((m, i) => {
    for (const agentId of attentionOf(m)) {
      out.agents.push(agentId);
      out.rooms.push(m.roomId);
      out.messageIds.push(m.id);
      out.fromEnd.push(fromEnd[i]!);
    }
  });
  return out;
}
