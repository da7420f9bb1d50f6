import type { FileInfo } from '@agent-messaging/protocol';
import { sql, type Kysely } from 'kysely';
import type { DB, Db } from '../../store/schema.js';
import { toIso } from '../../store/values.js';
import { recordAudit } from '../audit/audit.store.js';

/**
 * Files in the database (docs/files.md): a `files` row, invisible while `completed_at` is null, and
 * its bytes as numbered chunks of `file_chunks`; `file_usage` counts each uploader's bytes for the
 * storage quota. No transaction spans the network reads of an upload: each chunk is one short
 * transaction of its own (on SQLite a short write on the writer thread, between the other writers'
 * statements; on PostgreSQL one pooled connection for three statements).
 */

/** Every chunk but a file's last holds exactly this many bytes, so a byte range maps to chunk numbers. */
export const CHUNK_BYTES = 256 * 1024;

export type StoredFile = FileInfo;

/**
 * A new upload's row. With `reserve` (its announced length) the bytes are counted to the uploader
 * at once, in the same transaction, only if they stay within `quota`; false (nothing written) when
 * they would not. Without, its chunks are counted one by one as they are written.
 */
export async function insertFile(
  db: Kysely<DB>,
  row: { id: string; name: string; contentType: string; uploaderId: string; createdAt: string },
  reserve?: { bytes: number; quota: number },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await trx.insertInto('file_usage').values({ agent_id: row.uploaderId, bytes: 0 }).onConflict((oc) => oc.column('agent_id').doNothing()).execute();
    if (reserve !== undefined && !await count(trx, row.uploaderId, reserve.bytes, reserve.quota)) return false;
    await trx.insertInto('files').values({
      id: row.id, name: row.name, content_type: row.contentType, uploader_id: row.uploaderId, created_at: row.createdAt, completed_at: null,
      size: reserve?.bytes ?? 0,
    }).execute();
    return true;
  });
}

/** Adds `bytes` to the agent's count if it stays within `quota`: a conditional update, so parallel uploads cannot pass it together. */
async function count(db: Db, agentId: string, bytes: number, quota: number): Promise<boolean> {
  const counted = await db.updateTable('file_usage')
    .set({ bytes: sql<number>`bytes + ${bytes}` })
    .where('agent_id', '=', agentId)
    .where((eb) => eb(eb('bytes', '+', bytes), '<=', quota))
    .executeTakeFirst();
  return Number(counted.numUpdatedRows) > 0;
}

/** The bytes an agent's files take now (complete ones and uploads in progress). */
export async function storedBytes(db: Db, agentId: string): Promise<number> {
  const row = await db.selectFrom('file_usage').select('bytes').where('agent_id', '=', agentId).executeTakeFirst();
  return row === undefined ? 0 : Number(row.bytes);
}

/**
 * Stores chunk `n` of an upload. With `quota` (an upload whose length was not announced) its bytes
 * are counted to the file and to its uploader in the same transaction, only if they stay within
 * the quota: false (nothing written) when they would not. Throws when the file's row is gone (the
 * clean-up removed an upload stalled for an hour).
 */
export async function insertChunk(db: Kysely<DB>, file: { id: string; uploaderId: string }, n: number, bytes: Uint8Array, quota: number | null): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (quota !== null) {
      if (!await count(trx, file.uploaderId, bytes.length, quota)) return false;
      const grown = await trx.updateTable('files').set({ size: sql<number>`size + ${bytes.length}` }).where('id', '=', file.id).executeTakeFirst();
      if (Number(grown.numUpdatedRows) === 0) throw new Error(`file ${file.id}: removed during its upload`);
    }
    await trx.insertInto('file_chunks').values({ file_id: file.id, n, bytes }).execute();
    return true;
  });
}

/** Makes the upload visible, with its size and hash, and records `file-uploaded` with it. */
export async function completeFile(db: Kysely<DB>, file: { id: string; uploaderId: string; size: number; sha256: string; completedAt: string }): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.updateTable('files').set({ size: file.size, sha256: file.sha256, completed_at: file.completedAt }).where('id', '=', file.id).execute();
    await recordAudit(trx, { event: 'file-uploaded', actorId: file.uploaderId, subjectId: file.id, detail: { size: file.size } });
  });
}

/**
 * The clean-up's delete of one file it found expired: the row goes only if it is still incomplete
 * or still attached to nothing (a send may have attached it since it was found), its chunks with
 * it and its bytes back to its uploader's quota, in one transaction: a process stopped in between
 * leaves both (found again next time), never chunks without their row, which nothing would find
 * again. True when it went.
 */
export async function deleteExpiredFile(db: Kysely<DB>, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const gone = await trx.deleteFrom('files').where('id', '=', id)
      .where(({ or, eb, not, exists, selectFrom }) => or([
        eb('completed_at', 'is', null),
        not(exists(selectFrom('message_attachments').select('file_id').whereRef('message_attachments.file_id', '=', 'files.id'))),
      ]))
      .returning(['uploader_id', 'size'])
      .execute();
    if (gone.length === 0) return false;
    await trx.deleteFrom('file_chunks').where('file_id', '=', id).execute();
    await giveBack(trx, gone);
    return true;
  });
}

/**
 * Deletes files and their chunks and gives their bytes back to their uploaders' quota; deleting one
 * already gone is a no-op (several nodes may clean up at once: only the delete that removed the row
 * gives its bytes back).
 */
export async function deleteFiles(db: Kysely<DB>, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.transaction().execute(async (trx) => {
    const gone = await trx.deleteFrom('files').where('id', 'in', ids).returning(['uploader_id', 'size']).execute();
    await trx.deleteFrom('file_chunks').where('file_id', 'in', ids).execute();
    await giveBack(trx, gone);
  });
}

/**
 * Inside a transaction that removed attachments (the retention sweep): those of `ids` that no
 * message carries any more are deleted with their chunks, their bytes back to their uploaders.
 */
export async function deleteFilesAttachedToNothing(trx: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const gone = await trx.deleteFrom('files').where('id', 'in', ids)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('message_attachments').select('file_id').whereRef('message_attachments.file_id', '=', 'files.id'))))
    .returning(['id', 'uploader_id', 'size'])
    .execute();
  if (gone.length === 0) return;
  await trx.deleteFrom('file_chunks').where('file_id', 'in', gone.map((f) => f.id)).execute();
  await giveBack(trx, gone);
}

async function giveBack(db: Db, deleted: readonly { uploader_id: string; size: number | string }[]): Promise<void> {
  for (const file of deleted) {
    const size = Number(file.size);
    if (size > 0) await db.updateTable('file_usage').set({ bytes: sql<number>`bytes - ${size}` }).where('agent_id', '=', file.uploader_id).execute();
  }
}

const toFile = (row: { id: string; name: string; content_type: string; size: number | string; sha256: string | null; uploader_id: string; created_at: string | Date }): StoredFile => ({
  id: row.id,
  name: row.name,
  contentType: row.content_type,
  size: Number(row.size),
  sha256: row.sha256 ?? '',
  uploaderId: row.uploader_id,
  createdAt: toIso(row.created_at),
});

/** A completed file; undefined for an unknown id or an upload still in progress. */
export async function findCompleteFile(db: Db, id: string): Promise<StoredFile | undefined> {
  const row = await db.selectFrom('files')
    .select(['id', 'name', 'content_type', 'size', 'sha256', 'uploader_id', 'created_at'])
    .where('id', '=', id).where('completed_at', 'is not', null)
    .executeTakeFirst();
  return row === undefined ? undefined : toFile(row);
}

/**
 * Whether `agentId` is now a member of a room where a message that is not deleted carries the file;
 * `rooms`, a token's room restriction, narrows the rooms that count.
 */
export async function readableThroughRoom(db: Db, fileId: string, agentId: string, rooms: readonly string[] | undefined): Promise<boolean> {
  if (rooms !== undefined && rooms.length === 0) return false;
  let query = db.selectFrom('message_attachments as a')
    .innerJoin('messages as m', 'm.id', 'a.message_id')
    .innerJoin('room_members as rm', (join) => join.onRef('rm.room_id', '=', 'm.room_id').on('rm.agent_id', '=', agentId))
    .select('a.file_id')
    .where('a.file_id', '=', fileId)
    .where('m.deleted_at', 'is', null);
  if (rooms !== undefined) query = query.where('m.room_id', 'in', rooms);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}

/** Chunk `n` of a file's bytes (undefined past its end). */
export async function readChunk(db: Db, fileId: string, n: number): Promise<Uint8Array | undefined> {
  const row = await db.selectFrom('file_chunks').select('bytes').where('file_id', '=', fileId).where('n', '=', n).executeTakeFirst();
  return row?.bytes;
}

/**
 * The files the clean-up removes, at most `limit`: complete ones created before `unattachedBefore`
 * that no message carries, and uploads still incomplete created before `incompleteBefore`.
 */
export async function expiredFiles(db: Db, unattachedBefore: string, incompleteBefore: string, limit: number): Promise<string[]> {
  const unattached = await db.selectFrom('files').select('id')
    .where('completed_at', 'is not', null)
    .where('created_at', '<', unattachedBefore)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('message_attachments').select('file_id').whereRef('message_attachments.file_id', '=', 'files.id'))))
    .limit(limit).execute();
  const incomplete = await db.selectFrom('files').select('id')
    .where('completed_at', 'is', null)
    .where('created_at', '<', incompleteBefore)
    .limit(limit).execute();
  return [...unattached, ...incomplete].map((r) => r.id);
}
