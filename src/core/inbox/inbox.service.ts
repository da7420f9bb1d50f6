import type { Kysely } from 'kysely';
import { validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import type { Authz } from '../auth/authz.js';
import { HISTORY_LIMITS, INBOX_WAIT_MAX_SECONDS } from '@agent-messaging/protocol';
import { parsePageLimit } from '../paging.js';
import type { Message } from '../messages/message.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import type { InboxWaiters } from './inbox-waiters.js';
import { findUnread } from './inbox.store.js';


export interface InboxQuery {
  limit?: unknown;
  /** Seconds (0..30) to hold the request while nothing is unread. */
  wait?: unknown;
}

export interface InboxPage {
  /** Oldest first by createdAt, then id. */
  messages: Message[];
  hasMore: boolean;
  /** Every unread message of the agent, this page included. */
  unreadTotal: number;
}

/**
 * The inbox (docs/catch-up.md): the caller's unread messages across all its rooms. Reading marks
 * nothing read; the caller marks what it processed, per room (read cursors).
 */
export interface InboxService {
  /** `signal`: the client went away; a held request then stops waiting. */
  fetch(principal: Principal | null, query: InboxQuery, signal?: AbortSignal): Promise<InboxPage>;
}

/** Seconds from a query string or a number: 0..30, fractions allowed (a client may poll at 0.5 s). */
export function parseWaitSeconds(raw: unknown): number {
  if (raw === undefined || raw === null || raw === '') return 0;
  const value = typeof raw === 'string' && /^\d{1,2}(\.\d{1,3})?$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > INBOX_WAIT_MAX_SECONDS) {
    throw validationError({ wait: `must be a number of seconds from 0 to ${INBOX_WAIT_MAX_SECONDS}` });
  }
  return value;
}

const EMPTY: InboxPage = { messages: [], hasMore: false, unreadTotal: 0 };

export function createInboxService(deps: { db: Kysely<DB>; authz: Authz; rooms: RoomsService; waiters: InboxWaiters }): InboxService {
  const { db, authz, waiters } = deps;
  const roomsService = deps.rooms;

  return {
    async fetch(principal, query, signal) {
      const agent = authz.requireAgent(principal, 'messages:read');
      // A token limited to some rooms sees their unread messages only.
      const rooms = agent.scope?.rooms ?? null;
      const limit = parsePageLimit(query.limit, HISTORY_LIMITS);
      const deadline = Date.now() + parseWaitSeconds(query.wait) * 1000;
      for (;;) {
        const left = deadline - Date.now();
        // Registered before the read, so a message committed in between still wakes it. Between
        // reads nothing is held but this entry: no connection, no transaction.
        const wait = left > 0 && !waiters.isClosed && !signal?.aborted
          ? waiters.wait(agent.agentId, (await roomsService.listForAgent(agent)).map((r) => r.id), left, signal)
          : null;
        const page = await findUnread(db, agent.agentId, limit, rooms);
        if (page.messages.length > 0 || wait === null) {
          wait?.cancel();
          return { messages: page.messages, hasMore: page.hasMore, unreadTotal: page.unreadTotal };
        }
        // Woken: read again (the message committed before its wake-up). Otherwise answer empty.
        if ((await wait.outcome) !== 'woken') return { ...EMPTY, messages: [] };
      }
    },
  };
}
