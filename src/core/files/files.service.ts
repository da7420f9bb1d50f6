import { createHash } from 'node:crypto';
import { FILE_CONTENT_TYPE_MAX, fileNameProblem, type FileInfo } from '@agent-messaging/protocol';
import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { AppError, notFound, validationError } from '../../errors.js';
import { parseId } from '../validation.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import type { Authz } from '../authz/authz.js';
import type { Principal } from '../principal.js';
import {
  CHUNK_BYTES, completeFile, deleteExpiredFile, deleteFiles, expiredFiles, findCompleteFile, insertChunk, insertFile, readableThroughRoom, readChunk,
  storedBytes,
} from './files.store.js';

export { CHUNK_BYTES } from './files.store.js';

/**
 * Files (docs/files.md): uploads streamed into the database chunk by chunk (never the whole file in
 * memory), downloads streamed out the same way, the access rule, and the clean-up of files attached
 * to nothing and of uploads that never completed. REST and MCP both come here.
 */
export interface UploadInput {
  /** The `name` query parameter, unchecked. */
  name: unknown;
  /** The request's Content-Type, unchecked; absent: application/octet-stream. */
  contentType: string | undefined;
  /** The body's length as announced (Content-Length), when it is. */
  declaredLength?: number;
}

export interface FilesService {
  readonly maxBytes: number;
  /** FILE_QUOTA_BYTES: the bytes one agent's files may take in all. */
  readonly quotaBytes: number;
  /**
   * Checks the caller, the name, the type and the announced length (413 before a byte is read),
   * then stores `body` as it arrives; over `maxBytes` (or `limit`), or past the agent's quota, it
   * stops reading, removes what it stored and throws 413. Any failure (the client gone, the database away) leaves nothing visible.
   */
  upload(principal: Principal | null, input: UploadInput, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, limit?: number): Promise<FileInfo>;
  /** A file the caller may read (the access rule); 404 for every other id, complete or not. */
  open(principal: Principal | null, id: unknown): Promise<FileInfo>;
  /** The bytes `start..end` (inclusive) of a file `open` gave, read one chunk at a time, only the chunks covered. */
  bytes(file: FileInfo, start?: number, end?: number): AsyncGenerator<Uint8Array>;
  /** One run of the clean-up; the number of files deleted. */
  cleanup(now?: number): Promise<number>;
  /** Runs the clean-up every `cleanupIntervalMs` (app.ts starts it once the server listens). */
  start(): void;
  stop(): Promise<void>;
}

export interface FilesServiceDeps {
  db: Kysely<DB>;
  authz: Authz;
  maxBytes: number;
  quotaBytes: number;
  cleanupIntervalMs: number;
  unattachedMaxAgeMs: number;
  incompleteMaxAgeMs: number;
  warn(detail: Record<string, unknown>, message: string): void;
}

/** type/subtype and optional parameters, printable ASCII only. */
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;\s*[\x20-\x7e]*)?$/;
const DEFAULT_CONTENT_TYPE = 'application/octet-stream';
const CLEANUP_BATCH = 100;

export function contentTypeProblem(value: string): string | null {
  if (value.length > FILE_CONTENT_TYPE_MAX) return `must be at most ${FILE_CONTENT_TYPE_MAX} characters`;
  if (!CONTENT_TYPE.test(value)) return 'must be a media type such as text/plain or image/png';
  return null;
}

export const tooLarge = (maxBytes: number): AppError =>
  new AppError('PAYLOAD_TOO_LARGE', `File is larger than ${maxBytes} bytes (FILE_MAX_BYTES)`);

/** An upload in progress; `counted`: its announced length was counted to the quota at the start. */
interface Upload { id: string; uploaderId: string; counted: boolean }

export const overQuota = (quotaBytes: number, stored: number): AppError =>
  new AppError('PAYLOAD_TOO_LARGE', `Storage quota exceeded: an agent's files may take ${quotaBytes} bytes in all (FILE_QUOTA_BYTES) and this agent's take ${stored}`);

export function createFilesService(deps: FilesServiceDeps): FilesService {
  const { db, authz, maxBytes, quotaBytes } = deps;

  /** Writes one chunk, counted to the uploader's quota unless the whole was at the start; 413 when it would pass it. */
  async function write(file: Upload, n: number, bytes: Uint8Array): Promise<void> {
    if (!await insertChunk(db, file, n, bytes, file.counted ? null : quotaBytes)) throw overQuota(quotaBytes, await storedBytes(db, file.uploaderId));
  }

  async function store(file: Upload, body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, limit: number): Promise<{ size: number; sha256: string }> {
    const hash = createHash('sha256');
    let size = 0;
    let n = 0;
    // One chunk's buffer, reused: the iteration (and with it the socket) waits while it is written,
    // and once its insert has resolved the driver has copied it (SQLite: the message to the writer
    // thread; PostgreSQL: the query's parameters), so the next chunk may fill it again.
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let filled = 0;
    for await (const piece of body) {
      size += piece.length;
      if (size > limit) throw tooLarge(limit);
      hash.update(piece);
      let offset = 0;
      while (offset < piece.length) {
        const take = Math.min(CHUNK_BYTES - filled, piece.length - offset);
        chunk.set(piece.subarray(offset, offset + take), filled);
        filled += take;
        offset += take;
        if (filled === CHUNK_BYTES) {
          await write(file, n++, chunk);
          filled = 0;
        }
      }
    }
    if (filled > 0) await write(file, n, chunk.subarray(0, filled));
    return { size, sha256: hash.digest('hex') };
  }

  async function removeQuietly(id: string): Promise<void> {
    try {
      await deleteFiles(db, [id]);
    } catch (err) {
      // The clean-up removes it later (it is invisible meanwhile).
      deps.warn({ fileId: id, err: { message: err instanceof Error ? err.message : String(err) } }, 'could not remove a failed upload');
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  const service: FilesService = {
    maxBytes,
    quotaBytes,

    async upload(principal, input, body, limit = maxBytes) {
      const caller = authz.requireAgent(principal, 'messages:write');
      const nameProblem = fileNameProblem(input.name);
      const contentType = input.contentType === undefined || input.contentType.trim() === '' ? DEFAULT_CONTENT_TYPE : input.contentType.trim();
      const typeProblem = contentTypeProblem(contentType);
      if (nameProblem !== null || typeProblem !== null) {
        throw validationError({ ...(nameProblem === null ? {} : { name: nameProblem }), ...(typeProblem === null ? {} : { contentType: typeProblem }) });
      }
      if (input.declaredLength !== undefined && input.declaredLength > limit) throw tooLarge(limit);
      const id = uuidv7();
      const createdAt = nowIso();
      const name = input.name as string;
      // An announced length is counted whole before a byte is read (refused at once if it cannot
      // fit, and parallel uploads are served first come, first served); otherwise chunk by chunk.
      const reserve = input.declaredLength === undefined ? undefined : { bytes: input.declaredLength, quota: quotaBytes };
      if (!await insertFile(db, { id, name, contentType, uploaderId: caller.agentId, createdAt }, reserve)) {
        throw overQuota(quotaBytes, await storedBytes(db, caller.agentId));
      }
      let stored: { size: number; sha256: string };
      try {
        stored = await store({ id, uploaderId: caller.agentId, counted: reserve !== undefined }, body, limit);
        await completeFile(db, { id, uploaderId: caller.agentId, ...stored, completedAt: nowIso() });
      } catch (err) {
        await removeQuietly(id);
        throw err;
      }
      return { id, name, contentType, size: stored.size, sha256: stored.sha256, uploaderId: caller.agentId, createdAt };
    },

    async open(principal, id) {
      const caller = authz.requireAgent(principal, 'messages:read');
      const file = await findCompleteFile(db, parseId(id, 'id'));
      if (file === undefined) throw notFound('File');
      if (file.uploaderId === caller.agentId) return file;
      if (await readableThroughRoom(db, file.id, caller.agentId, caller.scope?.rooms)) return file;
      throw notFound('File');
    },

    async *bytes(file, start = 0, end = file.size - 1) {
      if (end < start) return;
      const last = Math.floor(end / CHUNK_BYTES);
      for (let n = Math.floor(start / CHUNK_BYTES); n <= last; n++) {
        const chunk = await readChunk(db, file.id, n);
        if (chunk === undefined) throw new Error(`file ${file.id}: chunk ${n} is missing`);
        const base = n * CHUNK_BYTES;
        const from = Math.max(0, start - base);
        const to = Math.min(chunk.length, end - base + 1);
        yield from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to);
      }
    },

    async cleanup(now = Date.now()) {
      const unattachedBefore = new Date(now - deps.unattachedMaxAgeMs).toISOString();
      const incompleteBefore = new Date(now - deps.incompleteMaxAgeMs).toISOString();
      let deleted = 0;
      for (;;) {
        const ids = await expiredFiles(db, unattachedBefore, incompleteBefore, CLEANUP_BATCH);
        // Several nodes may pick the same ids: a second delete finds nothing, harmlessly.
        for (const id of ids) if (await deleteExpiredFile(db, id)) deleted += 1;
        if (ids.length < CLEANUP_BATCH) return deleted;
      }
    },

    start() {
      if (timer !== undefined || deps.cleanupIntervalMs <= 0) return;
      timer = setInterval(() => {
        if (running !== undefined) return;
        running = service.cleanup().catch((err: unknown) => {
          deps.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'file clean-up failed');
        }).finally(() => { running = undefined; });
      }, deps.cleanupIntervalMs);
      timer.unref();
    },

    async stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running;
    },
  };
  return service;
}
