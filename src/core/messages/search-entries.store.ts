import type { CompiledQuery } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { prepared } from '../../store/prepared.js';
import type { Db } from '../../store/schema.js';

/*
 * A message's search entry (docs/search.md): written, replaced and removed with the message, in
 * the transaction that changes it, as part of the message's writes. The text is folded by
 * core/search-text.ts; core/search/ queries the entries.
 */

/** Words of the old text that find its entry (a phrase of its first words), enough to single it out among the message's. */
const ENTRY_KEY_WORDS = 8;

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
