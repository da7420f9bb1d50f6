import { dialectOf } from '../../store/dialect.js';
import type { Db } from '../../store/schema.js';
import { withAttachments } from '../messages/attachments.store.js';
import { toMessage } from '../messages/messages.store.js';
import type { Message } from '../messages/message.js';
import type { SearchQuery } from './search-query.js';

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


