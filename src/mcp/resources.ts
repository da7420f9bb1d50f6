import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, McpError, ReadResourceRequestSchema,
  type ReadResourceResult, type Resource,
} from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../context.js';
import type { Principal } from '../core/principal.js';
import { toPublicError } from '../errors.js';
import { renderMessages, roomSlugs, withSenderNames } from './tools/index.js';

/**
 * The MCP resources (docs/mcp.md): the caller's rooms, `ams://rooms/<slug>`, and its inbox,
 * `ams://inbox`, each read as recent messages in the text the tools give. Thin, as the tools are:
 * `resources/list` is the rooms `list_rooms` gives (the caller's member rooms within its token's
 * grant), a read is `read_messages` / `fetch_inbox` without waiting, so every rule of those
 * services (membership in strict mode, a scoped token's actions and rooms) holds for resources too.
 */

export const INBOX_URI = 'ams://inbox';
const ROOM_URI_PREFIX = 'ams://rooms/';
const ROOM_URI_TEMPLATE = `${ROOM_URI_PREFIX}{slug}`;
/** How many messages a read gives: the recent context a model starts from (read_messages pages further). */
export const RESOURCE_MESSAGES = 50;
const MIME = 'text/plain';

/** The JSON-RPC code MCP gives an unknown resource (the specification's "Resource not found"). */
const RESOURCE_NOT_FOUND = -32002;

export const roomUri = (slug: string): string => `${ROOM_URI_PREFIX}${encodeURIComponent(slug)}`;

/** A URI as an error message quotes it: the client's own input, so bounded. */
const quoted = (uri: string): string => (uri.length > 200 ? `${uri.slice(0, 200)}…` : uri);
const notFound = (uri: string): McpError =>
  new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${quoted(uri)} (resources/list names them: ${INBOX_URI}, ${ROOM_URI_TEMPLATE})`, { uri: quoted(uri) });

/** A service failure as the JSON-RPC error a resource read answers with (the code first, no internals). */
function toMcpError(ctx: AppContext, err: unknown, uri?: string): McpError {
  if (err instanceof McpError) return err;
  const error = toPublicError(err);
  if (uri !== undefined && error.code === 'ROOM_NOT_FOUND') return notFound(uri);
  if (error.status >= 500) {
    ctx.logger.error({ error: { type: err instanceof Error ? err.name : typeof err, message: err instanceof Error ? err.message : String(err) } }, 'resource request failed');
  }
  const details = error.status < 500 && error.details !== undefined ? { details: error.details } : undefined;
  return new McpError(error.jsonRpcCode, `${error.code}: ${error.message}`, details);
}

async function readRoom(ctx: AppContext, principal: Principal, uri: string, ref: string): Promise<ReadResourceResult> {
  const roomId = await ctx.rooms.resolveId(ref, 'uri');
  const room = await ctx.rooms.get(roomId);
  const page = await ctx.messages.history(principal, roomId, { limit: RESOURCE_MESSAGES });
  // Oldest first: a conversation reads top to bottom.
  const messages = (await withSenderNames(ctx, page.messages)).reverse();
  const header = `Room ${room.slug} "${room.name}" (id ${room.id}): ${messages.length === 1 ? 'its last message' : `its last ${messages.length} messages, oldest first`}.`;
  const footer = page.hasMore ? 'Older messages exist: the read_messages tool pages back.' : '';
  const text = `${header}\n\n${renderMessages(messages, new Map([[room.id, room.slug]]), 'No messages yet.', [footer])}`;
  return { contents: [{ uri, mimeType: MIME, text }] };
}

async function readInbox(ctx: AppContext, principal: Principal, uri: string): Promise<ReadResourceResult> {
  const page = await ctx.inbox.fetch(principal, { limit: RESOURCE_MESSAGES, wait: 0 });
  const messages = await withSenderNames(ctx, page.messages);
  const footer = `${page.unreadTotal} unread in all${page.hasMore ? '; more than shown' : ''}. Reading does not mark anything read: the mark_read tool does.`;
  const text = renderMessages(messages, await roomSlugs(ctx, messages.map((m) => m.roomId)), 'Nothing unread.', [footer]);
  return { contents: [{ uri, mimeType: MIME, text }] };
}

/** Offers the resources on one request's server (mcp.routes.ts), for this principal. */
export function registerResources(server: Server, ctx: AppContext, principal: Principal): void {
  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const listed = await ctx.readCursors.list(principal).catch((err: unknown) => { throw toMcpError(ctx, err); });
    const rooms: Resource[] = listed.flatMap((r) => (r.readSeq === undefined ? [] : [{
      uri: roomUri(r.slug),
      name: r.slug,
      title: r.name,
      description: `Room ${r.slug} "${r.name}": its last ${RESOURCE_MESSAGES} messages (lastSeq ${r.lastSeq}, ${r.unreadCount ?? 0} unread).`,
      mimeType: MIME,
    }]));
    const inbox: Resource = {
      uri: INBOX_URI, name: 'inbox', title: 'My unread messages', mimeType: MIME,
      description: `Your unread messages across your rooms, oldest first (up to ${RESOURCE_MESSAGES}).`,
    };
    return { resources: [inbox, ...rooms] };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [{
      uriTemplate: ROOM_URI_TEMPLATE, name: 'room', title: 'A room', mimeType: MIME,
      description: `A room you are a member of, by slug: its last ${RESOURCE_MESSAGES} messages, oldest first.`,
    }],
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params;
    try {
      if (uri === INBOX_URI) return await readInbox(ctx, principal, uri);
      if (uri.startsWith(ROOM_URI_PREFIX)) {
        let ref: string;
        try {
          ref = decodeURIComponent(uri.slice(ROOM_URI_PREFIX.length));
        } catch {
          throw notFound(uri);
        }
        return await readRoom(ctx, principal, uri, ref);
      }
    } catch (err) {
      throw toMcpError(ctx, err, uri);
    }
    throw notFound(uri);
  });
}
