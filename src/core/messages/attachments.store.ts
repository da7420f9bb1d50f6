import type { CompiledQuery } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import { prepared } from '../../store/prepared.js';
import type { Db } from '../../store/schema.js';
import type { Attachment, Message } from './message.js';

/**
 * The files messages carry (`message_attachments`, docs/protocol.md, Messages): written in the
 * send's transaction, read for a whole page of messages at once.
 */

type AttachmentRow = { message_id: string; id: string; name: string; content_type: string; size: number | string; sha256: string | null };

const toAttachment = (row: Omit<AttachmentRow, 'message_id'>): Attachment => ({
  id: row.id, name: row.name, contentType: row.content_type, size: Number(row.size), sha256: row.sha256 ?? '',
});

// The ids as one parameter (dialect.ts): compiled once, whatever their number.
const attachableQuery = prepared((db, p: { uploaderId: string; ids: unknown }) =>
  db.selectFrom('files').select(['id', 'name', 'content_type', 'size', 'sha256'])
    .where('uploader_id', '=', p.uploaderId).where('completed_at', 'is not', null).where(dialectOf(db).inIdList('id', p.ids)));

const pageAttachmentsQuery = prepared((db, p: { messageIds: unknown }) =>
  db.selectFrom('message_attachments as ma').innerJoin('files as f', 'f.id', 'ma.file_id')
    .select(['ma.message_id', 'f.id', 'f.name', 'f.content_type', 'f.size', 'f.sha256'])
    .where(dialectOf(db).inIdList('ma.message_id', p.messageIds)).orderBy('ma.message_id').orderBy('ma.position'));

const insertAttachmentQuery = prepared((db, p: { messageId: string; position: number; fileId: string }) =>
  db.insertInto('message_attachments').values({ message_id: p.messageId, position: p.position, file_id: p.fileId }));

/**
 * The files of `ids` (lowercase, distinct) that `uploaderId` uploaded and that are complete, in
 * the order of `ids`; null when any is not (unknown, someone else's, or still arriving).
 */
export async function findAttachable(db: Db, uploaderId: string, ids: readonly string[]): Promise<Attachment[] | null> {
  if (ids.length === 0) return [];
  const { rows } = await attachableQuery(db, { uploaderId, ids: dialectOf(db).idList(ids) });
  const byId = new Map(rows.map((row) => [row.id, toAttachment(row)]));
  const found = ids.map((id) => byId.get(id));
  return found.every((a) => a !== undefined) ? (found as Attachment[]) : null;
}

/** The batch's attachment rows (positions 0..n-1 per message): one compiled-once insert per row. */
export function attachmentStatements(db: Db, messages: readonly Message[]): CompiledQuery[] {
  const statements: CompiledQuery[] = [];
  for (const message of messages) {
    message.attachments.forEach((file, position) => statements.push(insertAttachmentQuery.compile(db, { messageId: message.id, position, fileId: file.id })));
  }
  return statements;
}

/** Removes a message's attachments (its deletion): the file stays, attached to nothing here. */
export async function removeAttachments(db: Db, messageId: string): Promise<void> {
  await db.deleteFrom('message_attachments').where('message_id', '=', messageId).execute();
}

/**
 * Sets `attachments` on messages read from the database (toMessage leaves `[]`): one query for
 * the whole page. Returns the same array, for chaining.
 */
export async function withAttachments<M extends Message>(db: Db, messages: M[]): Promise<M[]> {
  if (messages.length === 0) return messages;
  const { rows } = await pageAttachmentsQuery(db, { messageIds: dialectOf(db).idList(messages.map((m) => m.id)) });
  if (rows.length === 0) return messages;
  const byMessage = new Map<string, Attachment[]>();
  for (const row of rows) {
    let list = byMessage.get(row.message_id);
    if (list === undefined) byMessage.set(row.message_id, (list = []));
    list.push(toAttachment(row));
  }
  for (const message of messages) message.attachments = byMessage.get(message.id) ?? [];
  return messages;
}
