import type { Kysely } from 'kysely';
import { validationError } from '../../errors.js';
import type { DB, RoomKind } from '../../store/schema.js';
import { readsEveryGroupRoom, readsWithoutMembership, requireRoom, roomAllowed, type Authz } from '../authz/authz.js';
import { HISTORY_LIMITS, SearchQueryInput } from '@agent-messaging/protocol';
import { parsePageLimit } from '../paging.js';
import type { Message } from '../messages/message.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { isMember } from '../rooms/rooms.store.js';
import { compile, parseId } from '../validation.js';
import { parseSearchQuery } from './search-query.js';
import { findMessageRoom, searchMessages, type SearchScope } from './search.store.js';

export interface SearchMessagesQuery {
  q?: unknown;
  roomId?: unknown;
  /** Exclusive: results older than this message id. */
  before?: unknown;
  limit?: unknown;
}

export interface SearchPage {
  results: Message[];
  /** Id of the last (oldest) result on the page; null when the page is empty. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface SearchService {
  /**
   * Messages of the rooms the caller is a member of (an admin: every group room, and its own direct
   * rooms only), in both authorisation
   * modes: search reaches across rooms, so open mode's "any agent may read any history" is not
   * extended to it. `roomId` narrows it to one such room (404 unknown room, 403 not a member).
   */
  searchMessages(principal: Principal | null, query: SearchMessagesQuery): Promise<SearchPage>;
}

const searchInput = compile(SearchQueryInput);
const given = (value: unknown): boolean => value !== undefined && value !== null && value !== '';

export function createSearchService(deps: { db: Kysely<DB>; authz: Authz; rooms: RoomsService }): SearchService {
  const { db, authz, rooms } = deps;

  const kindOf = (roomId: string) => async (): Promise<RoomKind> => (await rooms.get(roomId)).kind;
  const mayRead = async (caller: Principal, roomId: string): Promise<boolean> =>
    roomAllowed(caller, roomId) && ((await readsWithoutMembership(caller, kindOf(roomId))) || (await isMember(db, roomId, caller.agentId)));

  return {
    async searchMessages(principal, raw) {
      const caller = authz.requireAgent(principal, 'messages:read');
      const { q } = searchInput.parse(raw.q === undefined ? {} : { q: raw.q });
      const query = parseSearchQuery(q);
      const limit = parsePageLimit(raw.limit, HISTORY_LIMITS);
      const before = given(raw.before) ? parseId(raw.before, 'before') : null;
      const roomId = given(raw.roomId) ? parseId(raw.roomId, 'roomId') : null;

      let scope: SearchScope;
      if (roomId !== null) {
        if (!(await readsWithoutMembership(caller, kindOf(roomId)))) await rooms.assertMember(roomId, caller.agentId);
        requireRoom(caller, roomId);
        scope = { kind: 'room', roomId };
      } else {
        scope = readsEveryGroupRoom(caller) ? { kind: 'all', agentId: caller.agentId } : { kind: 'member', agentId: caller.agentId };
      }
      if (before !== null) {
        // As history: the cursor must be a message the caller could have been shown here.
        const beforeRoom = await findMessageRoom(db, before);
        const fits = beforeRoom !== null && (roomId === null ? await mayRead(caller, beforeRoom) : beforeRoom === roomId);
        if (!fits) throw validationError({ before: roomId === null ? 'is not the id of a message you can search' : 'is not the id of a message in this room' });
      }

      // A token limited to some rooms searches those only.
      const { messages, hasMore } = await searchMessages(db, { query, scope, rooms: caller.scope?.rooms ?? null, before, limit });
      return { results: messages, hasMore, nextCursor: messages.length > 0 ? messages[messages.length - 1]!.id : null };
    },
  };
}
