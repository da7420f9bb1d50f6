import type { CompiledQuery } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import type { Db } from '../../store/schema.js';
import { auditEntriesStatement, auditRow, auditStatement, type AuditEntry } from '../audit/audit.store.js';
import { searchText } from '../search-text.js';
import { searchEntriesStatement, searchEntryStatement } from './search-entries.store.js';
import { attentionColumns, attentionStatements } from './attention.js';
import type { Message } from './message.js';
import { insertBatchOnPostgres, insertMessagesStatement, insertMessageStatement, replyCountStatements } from './messages.store.js';
import type { Numbering, RoomCounter } from './seq.store.js';

/** A group commit's writes, as its engine takes them best (`batchWrites`). */
export type BatchWrites =
  /** One statement that is its own transaction, answering the rooms' counters (the batch's last read). */
  | { alone: CompiledQuery<RoomCounter> }
  /** Statements for the batch's transaction, the counters' updates first. */
  | { statements: CompiledQuery[] };

/**
 * The writes of a batch of sends already numbered: the messages, their search entries, who each
 * is for the attention of (attention.ts), the reply counts of their roots and audit records. On
 * PostgreSQL, where each statement is a round trip, the batch is one statement
 * (`insertBatchOnPostgres`), or, when other writes must share its transaction (`shared`: webhook
 * deliveries reference the messages), one multi-row statement per kind; on SQLite, where the
 * statements travel together to the writer thread, one compiled-once statement per row, grouped by
 * kind. docs/scale-out.md, "The send path on PostgreSQL", has the measurements.
 */
export function batchWrites(db: Db, messages: readonly Message[], numbering: Numbering, audit: readonly AuditEntry[], shared: boolean): BatchWrites {
  const search = messages.map((message) => ({ messageId: message.id, words: searchText(message.body) }));
  if (dialectOf(db).name === 'postgres') {
    if (!shared) {
      return {
        alone: insertBatchOnPostgres(db, {
          rooms: numbering.rooms, counts: numbering.counts, messages, fromEnd: numbering.fromEnd,
          search: search.filter((e) => e.words !== ''), audit: audit.map(auditRow),
          attention: attentionColumns(messages, numbering.fromEnd),
        }),
      };
    }
    const statements = [...numbering.statements, insertMessagesStatement(db, messages, numbering.fromEnd), ...replyCountStatements(db, messages, true)];
    const searchEntries = searchEntriesStatement(db, search);
    if (searchEntries !== null) statements.push(searchEntries);
    statements.push(...attentionStatements(db, messages, numbering.fromEnd, true));
    statements.push(auditEntriesStatement(db, audit));
    return { statements };
  }
  const statements = [...numbering.statements];
  messages.forEach((message, i) => statements.push(insertMessageStatement(db, message, numbering.fromEnd[i]!)));
  statements.push(...replyCountStatements(db, messages, false));
  for (const { messageId, words } of search) {
    const searchEntry = searchEntryStatement(db, messageId, words);
    if (searchEntry !== null) statements.push(searchEntry);
  }
  statements.push(...attentionStatements(db, messages, numbering.fromEnd, false));
  for (const entry of audit) statements.push(auditStatement(db, entry));
  return { statements };
}
