import type { Kysely } from 'kysely';
import { validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { findAgentNames } from '../agents/agents.store.js';
import { recordAudit } from '../audit/audit.store.js';
import { readsWithoutMembership, requireRoom, type Authz } from '../authz/authz.js';
import type { Message } from '../messages/message.js';
import { pageAfterSeq } from '../messages/seq.store.js';
import { findLastSeq } from '../rooms/rooms.store.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import type { Room } from '../rooms/rooms.store.js';
import { parseId } from '../validation.js';
import { claimSweep, deleteMessages, oldestMessages, roomsToSweep } from './retention.store.js';

/**
 * Keeping and exporting what was said (docs/retention.md): the retention sweep, which deletes the
 * messages older than their room's retention for good, and the streamed export of a room.
 */

export type ExportFormat = 'ndjson' | 'markdown';

export interface RoomExport {
  room: Room;
  format: ExportFormat;
  /** The export's text, a page at a time: pulled, so a slow reader holds the reads back. */
  chunks: AsyncGenerator<string, void, undefined>;
}

export interface RetentionService {
  /**
   * One sweep, now, on this node (tests; the timer's sweeps claim their turn first): every room not
   * under legal hold with a retention loses its expired messages, a batch per transaction. Resolves
   * to the number of messages deleted.
   */
  sweep(now?: number): Promise<number>;
  /** Every `sweepIntervalMs`, the node that claims the turn sweeps (one node per period across nodes). */
  start(onError: (err: unknown) => void): void;
  /** The sweeps this node's timer has run (claimed turns), for operators and the cluster test. */
  readonly sweepsRun: number;
  /** Stops the timer; resolves once a sweep in progress has stopped (after its current batch). */
  stop(): Promise<void>;
  /** `GET /api/v1/rooms/:id/export`: checks access and records `room-exported`; the text follows as it is read. */
  exportRoom(principal: Principal | null, roomId: unknown, format: unknown): Promise<RoomExport>;
}

export interface RetentionDeps {
  db: Kysely<DB>;
  authz: Authz;
  rooms: RoomsService;
  /** RETENTION_DAYS: null keeps messages for ever where a room sets no retention of its own. */
  defaultDays: number | null;
  sweepIntervalMs: number;
  /** Messages per transaction: small, so sends wait little for SQLite's one writer. */
  batchSize?: number;
  /** Called after each committed batch (tests put a room under legal hold between two batches). */
  afterBatch?: (roomId: string, deleted: number) => Promise<void>;
}

const DAY_MS = 24 * 3600 * 1000;
const SWEEP_BATCH = 200;
const EXPORT_PAGE = 200;

/** Lets other work (sends, reads) run between two batches. */
const yieldToOthers = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export function createRetentionService(deps: RetentionDeps): RetentionService {
  const { db, authz, rooms } = deps;
  const batchSize = deps.batchSize ?? SWEEP_BATCH;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopping = false;
  let sweepsRun = 0;

  /** A room's expired messages, oldest first, batch by batch; stops at the first one still kept or at a legal hold. */
  const sweepRoom = async (roomId: string, days: number, now: number): Promise<number> => {
    const cutoff = new Date(now - days * DAY_MS).toISOString();
    let deleted = 0;
    while (!stopping) {
      const batch = await oldestMessages(db, roomId, 0, batchSize);
      // `seq` order is commit order: the expired ones are a prefix (a late-committed older send waits for the next sweep).
      const firstKept = batch.findIndex((m) => m.createdAt >= cutoff);
      const expired = firstKept === -1 ? batch : batch.slice(0, firstKept);
      if (expired.length === 0) break;
      const done = await db.transaction().execute((trx) => deleteMessages(trx, roomId, expired));
      if (!done) break; // put under legal hold meanwhile
      deleted += expired.length;
      await deps.afterBatch?.(roomId, expired.length);
      if (expired.length < batch.length || batch.length < batchSize) break;
      await yieldToOthers();
    }
    return deleted;
  };

  const sweep = async (now = Date.now()): Promise<number> => {
    let deleted = 0;
    for (const room of await roomsToSweep(db, deps.defaultDays !== null)) {
      if (stopping) break;
      const days = room.retentionDays ?? deps.defaultDays;
      if (days === null) continue;
      deleted += await sweepRoom(room.id, days, now);
      await yieldToOthers();
    }
    return deleted;
  };

  const canRead = async (principal: Principal | null, roomId: string): Promise<Principal> => {
    const reader = authz.requireAgent(principal, 'messages:read');
    const room = await rooms.get(roomId);
    if (!(await readsWithoutMembership(reader, () => Promise.resolve(room.kind)))) await rooms.assertMember(roomId, reader.agentId);
    requireRoom(reader, roomId);
    return reader;
  };

  return {
    sweep,

    get sweepsRun() {
      return sweepsRun;
    },

    start(onError) {
      if (timer !== undefined) return;
      stopping = false;
      timer = setInterval(() => {
        if (running !== undefined) return;
        const now = Date.now();
        running = claimSweep(db, now, deps.sweepIntervalMs)
          .then((mine) => {
            if (!mine) return 0;
            sweepsRun += 1;
            return sweep(now);
          })
          .catch(onError)
          .finally(() => { running = undefined; });
      }, deps.sweepIntervalMs);
      timer.unref();
    },

    async stop() {
      stopping = true;
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running;
    },

    async exportRoom(principal, rawRoomId, rawFormat) {
      const roomId = parseId(rawRoomId, 'id');
      const format = rawFormat === undefined || rawFormat === '' ? 'ndjson' : rawFormat;
      if (format !== 'ndjson' && format !== 'markdown') throw validationError({ format: 'must be "ndjson" or "markdown"' });
      const reader = await canRead(principal, roomId);
      const room = await rooms.getFresh(roomId);
      // The export is the room up to this seq: every seq up to a committed last_seq is committed,
      // so what follows is a gapless prefix (less what retention deleted) however the room is written to meanwhile.
      const upTo = (await findLastSeq(db, roomId)) ?? 0;
      room.lastSeq = upTo;
      await recordAudit(db, { event: 'room-exported', actorId: reader.agentId, subjectId: roomId, detail: { format } });
      return { room, format, chunks: format === 'ndjson' ? ndjson(db, room, upTo) : markdown(db, room, upTo) };
    },
  };
}

/** The room's messages with `seq <= upTo`, a page at a time (keyset on `seq`: each page one indexed read). */
async function* pages(db: Kysely<DB>, roomId: string, upTo: number): AsyncGenerator<Message[], void, undefined> {
  let afterSeq = 0;
  for (;;) {
    const { messages, hasMore } = await pageAfterSeq(db, roomId, afterSeq, upTo, EXPORT_PAGE);
    if (messages.length > 0) yield messages;
    if (!hasMore || messages.length === 0) return;
    afterSeq = messages[messages.length - 1]!.seq;
  }
}

async function* ndjson(db: Kysely<DB>, room: Room, upTo: number): AsyncGenerator<string, void, undefined> {
  yield `${JSON.stringify({ room })}\n`;
  for await (const page of pages(db, room.id, upTo)) yield page.map((m) => `${JSON.stringify(m)}\n`).join('');
}

/** Continuation lines of a body, indented under its first. */
const indentLines = (text: string, indent: string): string => text.split('\n').join(`\n${indent}`);

async function* markdown(db: Kysely<DB>, room: Room, upTo: number): AsyncGenerator<string, void, undefined> {
  yield `# ${room.name}\n\nRoom \`${room.slug}\` (${room.kind}), exported ${nowIso()}, messages up to seq ${upTo}.\n\n`;
  // Names read once per agent; a room's senders are few next to its messages.
  const names = new Map<string, string>();
  for await (const page of pages(db, room.id, upTo)) {
    const unknown = [...new Set(page.map((m) => m.senderId))].filter((id) => !names.has(id));
    for (const [id, name] of await findAgentNames(db, unknown)) names.set(id, name);
    let text = '';
    for (const m of page) {
      // A reply sits under its thread, one level in (threads are flat).
      const indent = m.threadId === null ? '' : '    ';
      const body = m.deletedAt !== null ? '_(deleted)_' : indentLines(m.body, `${indent}  `);
      const edited = m.editedAt !== null && m.deletedAt === null ? ' _(edited)_' : '';
      text += `${indent}- **${m.createdAt}** **${names.get(m.senderId) ?? m.senderId}**${edited}: ${body}\n`;
      if (m.attachments.length > 0) text += `${indent}  Files: ${m.attachments.map((f) => f.name).join(', ')}\n`;
    }
    yield text;
  }
}
