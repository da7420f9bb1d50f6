import type { CompiledQuery } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { prepared } from '../../store/prepared.js';
import type { Db } from '../../store/schema.js';
import { withAttachments } from '../messages/attachments.store.js';
import { toMessage } from '../messages/messages.store.js';
import type { Message } from '../messages/message.js';
import type { SearchQuery } from './search-query.js';

// The same statement on both engines: PostgreSQL derives the tsvector from `words` itself
// (a generated column, see migration 005).
const insertEntryQuery = prepared((db, p: { messageId: string; words: string }) =>
  db.insertInto('message_search').values({ message_id: p.messageId, words: p.words }),
);

/**
 * Indexes a message, in the transaction that inserts it. `words` is searchText(body); a message
 * without words gets no entry (nothing could find it): null.
 */
export function searchEntryStatement(db: Db, messageId: string, words: string): CompiledQuery | null {
  return words === '' ? null : insertEntryQuery.compile(db, { messageId, words });
}

/** searchEntryStatement for a batch, as one multi-row insert (PostgreSQL's group commit); null: no entry. */
export function searchEntriesStatement(db: Db, entries: readonly { messageId: string; words: string }[]): CompiledQuery | null {
  const rows = entries.filter((e) => e.words !== '').map((e) => ({ message_id: e.messageId, words: e.words }));
  return rows.length === 0 ? null : db.insertInto('message_search').values(rows).compile();
}

/** Which rooms a search covers. */
export type SearchScope =
  | { kind: 'room'; roomId: string }
  | { kind: 'member'; agentId: string }
  /** Every group room and the agent's direct rooms (an admin: direct rooms stay private). */
  | { kind: 'all'; agentId: string };

export interface SearchParams {
  query: SearchQuery;
  scope: SearchScope;
  /** Only these rooms (a token's `rooms`), or null. */
  rooms: readonly string[] | null;
  /** Exclusive: only messages with a smaller (older) id. */
  before: string | null;
  limit: number;
}

/**
 * Newest first; fetches one extra row to tell whether more results exist.
 *
 * The shape `messages where id in (matching ids)` is deliberate: SQLite reads the matching ids
 * once into a sorted list and walks it from the newest end, stopping after `limit + 1` rows of the
 * caller's rooms, with no sort (a join from the FTS5 table took 15 times longer on two common
 * words over 200,000 messages, see docs/search.md).
 */
export async function searchMessages(db: Db, params: SearchParams): Promise<{ messages: Message[]; hasMore: boolean }> {
  const { query, scope, rooms, before, limit } = params;
  if (rooms !== null && rooms.length === 0) return { messages: [], hasMore: false };
  let matching = db.selectFrom('message_search as s').select('s.message_id');
  for (const condition of dialectOf(db).fullTextMatch(query)) matching = matching.where(condition);
  let select = db.selectFrom('messages as m').selectAll('m').where('m.id', 'in', matching);
  if (scope.kind === 'room') select = select.where('m.room_id', '=', scope.roomId);
  if (scope.kind === 'member') {
    select = select.where('m.room_id', 'in', db.selectFrom('room_members').select('room_members.room_id').where('room_members.agent_id', '=', scope.agentId));
  }
  if (scope.kind === 'all') {
    const { agentId } = scope;
    select = select.where((eb) => eb.or([
      eb('m.room_id', 'in', eb.selectFrom('rooms').select('rooms.id').where('rooms.kind', '=', 'group')),
      eb('m.room_id', 'in', eb.selectFrom('room_members').select('room_members.room_id').where('room_members.agent_id', '=', agentId)),
    ]));
  }
  if (rooms !== null) select = select.where('m.room_id', 'in', rooms);
  if (before !== null) select = select.where('m.id', '<', before);
  const rows = await select.orderBy('m.id', 'desc').limit(limit + 1).execute();
  return { messages: await withAttachments(db, rows.slice(0, limit).map(toMessage)), hasMore: rows.length > limit };
}

/** The room of a message, or null when there is no such message. */
export async function findMessageRoom(db: Db, messageId: string): Promise<string | null> {
  const row = await db.selectFrom('messages').select('room_id').where('id', '=', messageId).executeTakeFirst();
  return row?.room_id ?? null;
}

/** Words of the old text that find its entry (a phrase of its first words), enough to single it out among the message's. */
const ENTRY_KEY_WORDS = 8;

/**
 * Removes a message's entry (its text edited or deleted), in the transaction that changes it. The
 * entry is found through the index itself, by the start of the text it was made from, and then by
 * message id: on SQLite the FTS5 table has no index on `message_id` (migration 005); on PostgreSQL
 * `message_id` is its key anyway. `words` is searchText of the text the entry was made from.
 */
export async function removeSearchEntry(db: Db, messageId: string, words: string): Promise<void> {
  if (words === '') return;
  const key = words.split(' ').slice(0, ENTRY_KEY_WORDS);
  let remove = db.deleteFrom('message_search as s').where('s.message_id', '=', messageId);
  for (const condition of dialectOf(db).fullTextMatch({ include: [{ words: key, prefix: false }], exclude: [] })) remove = remove.where(condition);
  await remove.execute();
}
