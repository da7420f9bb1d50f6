import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from './column-types.js';

/** The tables as this migration knows them (frozen: not today's schema types). */
interface Tables {
  messages: { id: string; body: string };
  message_search: { message_id: string; words: string };
}

const BACKFILL_BATCH = 500;

/**
 * The folding of the text the index stores, as it was when this migration was written (a frozen
 * copy of core/search-text.ts's searchText, which the messages sent since use): NFKD,
 * lowercase, NFKD again, no combining marks; a word is a run of letters and digits, cut to 200
 * code points; the words joined by single spaces. test/unit/store-dialect.test.ts checks that the
 * live folding still gives the same text; when it stops doing so, a new migration must rebuild
 * the index with the new folding.
 */
const MARKS = /\p{M}+/gu;
const WORD = /[\p{L}\p{N}]+/gu;
const MAX_WORD_LENGTH = 200;

export function searchTextV1(body: string): string {
  const folded = body.normalize('NFKD').toLowerCase().normalize('NFKD').replace(MARKS, '');
  const bound = (word: string): string => (word.length <= MAX_WORD_LENGTH ? word : Array.from(word).slice(0, MAX_WORD_LENGTH).join(''));
  return Array.from(folded.matchAll(WORD), (m) => bound(m[0])).join(' ');
}

/**
 * Message search (docs/search.md). Both engines index the same folded words
 * (searchTextV1 above), computed in JavaScript, so neither engine's tokenizer or locale decides what
 * a word is:
 * - SQLite: an FTS5 table with the `ascii` tokenizer, which splits the stored text on its spaces
 *   only (every non-ASCII character is a token character); `columnsize=0` because nothing ranks by
 *   length, which saves a write per message.
 * - PostgreSQL: a table whose tsvector is generated from the same text by splitting on spaces
 *   (array_to_tsvector: no parser, no dictionary), under a GIN index.
 * Existing messages are indexed here, in id order.
 */
export function messageSearch(engine: Engine): Migration {
  return {
    async up(raw: Kysely<unknown>) {
      const db = raw as Kysely<Tables>;
      if (engine === 'sqlite') {
        await sql`create virtual table message_search using fts5(message_id unindexed, words, tokenize = 'ascii', columnsize = 0)`.execute(db);
      } else {
        await sql`
          create table message_search (
            message_id uuid primary key references messages (id),
            words text not null,
            tsv tsvector not null generated always as (array_to_tsvector(string_to_array(words, ' '))) stored
          )`.execute(db);
        await sql`create index message_search_tsv_idx on message_search using gin (tsv)`.execute(db);
      }

      let after: string | null = null;
      for (;;) {
        let page = db.selectFrom('messages').select(['id', 'body']).orderBy('id').limit(BACKFILL_BATCH);
        if (after !== null) page = page.where('id', '>', after);
        const rows = await page.execute();
        if (rows.length === 0) break;
        const entries = rows.map((r) => ({ message_id: r.id, words: searchTextV1(r.body) })).filter((e) => e.words !== '');
        if (entries.length > 0) await db.insertInto('message_search').values(entries).execute();
        after = rows[rows.length - 1]!.id;
      }
    },
  };
}
