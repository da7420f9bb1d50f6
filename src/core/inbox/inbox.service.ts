import type { Kysely } from 'kysely';
import { validationError } from '../../errors.js';
import type { WaitSlots } from '../../limits/wait-slots.js';
import type { DB } from '../../store/schema.js';
import type { Authz } from '../authz/authz.js';
import { HISTORY_LIMITS, INBOX_FILTERS, INBOX_WAIT_MAX_SECONDS, type InboxFilter } from '@agent-messaging/protocol';
import { parsePageLimit } from '../paging.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { longPoll } from '../waiters/waiters.js';
import type { InboxWaiters } from './inbox-waiters.js';
import { countUnread, countUnreadAttention, findUnread, type InboxMessage } from './inbox.store.js';


export interface InboxQuery {
  limit?: unknown;
  /** Seconds (0..30) to hold the request while nothing is unread. */
  wait?: unknown;
  /** `all` (default) or `attention`: only messages for the caller's attention. */
  filter?: unknown;
}

export interface InboxPage {
  /** Oldest first by createdAt, then id; each says whether it is for the caller's attention. */
  messages: InboxMessage[];
  /** Whether more follow that the filter selects. */
  hasMore: boolean;
  /** Every unread message of the agent, this page included. */
  unreadTotal: number;
  /** The unread messages for the agent's attention, this page included. */
  attentionTotal: number;
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

export function parseInboxFilter(raw: unknown): InboxFilter {
  if (raw === undefined || raw === null || raw === '') return 'all';
  if (typeof raw === 'string' && (INBOX_FILTERS as readonly string[]).includes(raw)) return raw as InboxFilter;
  throw validationError({ filter: `must be one of ${INBOX_FILTERS.join(', ')}` });
}

const EMPTY: InboxPage = { messages: [], hasMore: false, unreadTotal: 0, attentionTotal: 0 };

export function createInboxService(deps: { db: Kysely<DB>; authz: Authz; rooms: RoomsService; waiters: InboxWaiters; waitSlots: WaitSlots }): InboxService {
  const { db, authz, waiters, waitSlots } = deps;
  const roomsService = deps.rooms;

  return {
    async fetch(principal, query, signal) {
      const agent = authz.requireAgent(principal, 'messages:read');
      // A token limited to some rooms sees their unread messages only.
      const rooms = agent.scope?.rooms ?? null;
      const limit = parsePageLimit(query.limit, HISTORY_LIMITS);
      const attentionOnly = parseInboxFilter(query.filter) === 'attention';
      return readOrWait(agent, limit, rooms, attentionOnly, Date.now() + parseWaitSeconds(query.wait) * 1000, signal);
    },
  };

  /**
   * The shared long poll (core/waiters/waiters.ts): a request that would wait holds one of its
   * agent's wait slots until it answers; beyond the cap it still answers what is unread, and only
   * when that is nothing is it refused (RATE_LIMITED).
   */
  async function readOrWait(agent: Principal, limit: number, rooms: readonly string[] | null, attentionOnly: boolean, deadline: number, signal: AbortSignal | undefined): Promise<InboxPage> {
    const end = await longPoll({
      agentId: agent.agentId,
      deadline,
      slots: waitSlots,
      registry: waiters,
      signal,
      register: async (left) => {
        const wait = waiters.wait(agent.agentId, (await roomsService.listForAgent(agent)).map((r) => r.id), left, signal, attentionOnly);
        await waiters.ready;
        return wait;
      },
      read: () => findUnread(db, agent.agentId, limit, rooms, attentionOnly),
      found: (page) => page.messages.length > 0,
    });
    if (end.kind === 'ended') {
      // Nothing for its attention came; other unread messages may be there all along.
      return attentionOnly ? { ...EMPTY, messages: [], unreadTotal: await countUnread(db, agent.agentId, rooms) } : { ...EMPTY, messages: [] };
    }
    const page = end.read;
    const [unreadTotal, attentionTotal] = attentionOnly
      ? [await countUnread(db, agent.agentId, rooms), page.total]
      : [page.total, await countUnreadAttention(db, agent.agentId, rooms)];
    return { messages: page.messages, hasMore: page.hasMore, unreadTotal, attentionTotal };
  }
}
