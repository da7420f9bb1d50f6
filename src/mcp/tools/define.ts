import type { Static, TObject, TProperties } from '@sinclair/typebox';
import { ATTACHMENTS_MAX, HISTORY_LIMITS, IMPORTANCES, MESSAGE_DATA_MAX_BYTES, MESSAGE_DATA_MAX_DEPTH } from '@agent-messaging/protocol';
import type { AppContext } from '../../context.js';
import type { Principal } from '../../core/principal.js';
import { Type } from '../../core/validation.js';

/**
 * What every tool module shares (docs/protocol.md, MCP tools): the shape of a tool and of its
 * result, and the argument schemas more than one domain uses. Each tool is a thin adapter, as a
 * REST route is: arguments (checked for shape here, for meaning by the service), one call of the
 * same domain service REST and WebSocket call, and the result as `structuredContent` plus a text a
 * model reads. A failure is the service's AppError through `toPublicError`, as `isError` text
 * starting with its code (index.ts).
 *
 * Descriptions are written for a language model: what the tool does, when to use it, what comes back.
 */

/** What a tool call returns (the MCP CallToolResult this service uses). */
export type ToolContent = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

export interface ToolResult {
  [key: string]: unknown;
  content: ToolContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ToolCall {
  ctx: AppContext;
  principal: Principal;
  /** Aborted when the client goes away: a waiting fetch_inbox stops waiting. */
  signal: AbortSignal;
  /** Told the scope action a refusal named (an OAuth access token's call: `/mcp` answers 403 with a challenge). */
  scopeRefused?: (action: string) => void;
}

export interface ToolSpec<P extends TProperties> {
  title: string;
  description: string;
  input: TObject<P>;
  /** The service's field names that differ from the tool's argument names, for error details. */
  fields?: Record<string, string>;
  readOnly: boolean;
  /** `content`, when given, is the result's content instead of `text` alone (read_file's image). */
  run(args: Static<TObject<P>>, call: ToolCall): Promise<{ data: Record<string, unknown>; text: string; content?: ToolContent[] }>;
}

export const defineTool = <P extends TProperties>(spec: ToolSpec<P>): ToolSpec<P> => spec;

export const args = <P extends TProperties>(properties: P): TObject<P> => Type.Object(properties, { additionalProperties: false });

export const ROOM = Type.String({ minLength: 1, maxLength: 64, description: 'The room: its id (a UUID) or its slug (e.g. "ops"). list_rooms shows both.' });
export const LIMIT = Type.Integer({ minimum: 1, maximum: HISTORY_LIMITS.max, description: `How many items at most (1 to ${HISTORY_LIMITS.max}, default ${HISTORY_LIMITS.default}).` });
/** `data` and `attachments` of a send (docs/protocol.md, Messages): the service checks them, naming the field. */
export const DATA = Type.Object({}, { additionalProperties: true, description: `A JSON object for programs (a result, a verdict), at most ${MESSAGE_DATA_MAX_BYTES} bytes and ${MESSAGE_DATA_MAX_DEPTH} levels deep; members receive it as is. Not searched.` });
export const ATTACHMENTS = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 100, description: `Ids of files you uploaded (upload_file), at most ${ATTACHMENTS_MAX}: the message carries them, and members of the room may download them.` });
/** `importance` and `ackRequired` of a send (docs/acknowledgements.md). */
export const IMPORTANCE = Type.Union([...IMPORTANCES.map((i) => Type.Literal(i)), Type.Null()], { description: 'low, normal (the default), high or urgent (urgent: for the attention of every member but you).' });
export const ACK_REQUIRED = Type.Union([Type.Boolean(), Type.Null()], { description: 'true: the agents you mention (or, without mentions, every other member) must acknowledge it with ack_message; you see who did.' });
