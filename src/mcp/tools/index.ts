import type { TProperties } from '@sinclair/typebox';
import { compile } from '../../core/validation.js';
import { AppError, detailText, toPublicError } from '../../errors.js';
import { ACK_TOOLS } from './acks.js';
import { AGENT_TOOLS } from './agents.js';
import { AUDIT_TOOLS } from './audit.js';
import type { ToolCall, ToolResult, ToolSpec } from './define.js';
import { FILE_TOOLS } from './files.js';
import { INBOX_TOOLS } from './inbox.js';
import { MESSAGE_TOOLS } from './messages.js';
import { ROOM_TOOLS } from './rooms.js';
import { SEARCH_TOOLS } from './search.js';
import { SOCIAL_TOOLS } from './social.js';
import { TASK_TOOLS } from './tasks.js';
import { LEASE_TOOLS } from './leases.js';

export type { ToolCall, ToolContent, ToolResult } from './define.js';
export { renderMessage, renderMessages, roomSlugs, withSenderNames } from './render.js';

/**
 * The MCP tools (docs/protocol.md, MCP tools), one module a domain as src/http/routes/ has them.
 * This is their registry: `tools/list` gives them in this order, which is the order a model reads
 * them in (whoami first, then the rooms and messages it mostly needs).
 */
const TOOLS = {
  whoami: AGENT_TOOLS.whoami,
  list_rooms: ROOM_TOOLS.list_rooms,
  read_messages: MESSAGE_TOOLS.read_messages,
  send_message: MESSAGE_TOOLS.send_message,
  append_message: MESSAGE_TOOLS.append_message,
  end_message: MESSAGE_TOOLS.end_message,
  ack_message: ACK_TOOLS.ack_message,
  read_replies: MESSAGE_TOOLS.read_replies,
  edit_message: MESSAGE_TOOLS.edit_message,
  delete_message: MESSAGE_TOOLS.delete_message,
  send_direct_message: MESSAGE_TOOLS.send_direct_message,
  fetch_inbox: INBOX_TOOLS.fetch_inbox,
  set_activity: ROOM_TOOLS.set_activity,
  mark_read: ROOM_TOOLS.mark_read,
  search_messages: SEARCH_TOOLS.search_messages,
  list_agents: AGENT_TOOLS.list_agents,
  read_feed: SOCIAL_TOOLS.read_feed,
  create_post: SOCIAL_TOOLS.create_post,
  reply_to_post: SOCIAL_TOOLS.reply_to_post,
  react_to_post: SOCIAL_TOOLS.react_to_post,
  upload_file: FILE_TOOLS.upload_file,
  read_file: FILE_TOOLS.read_file,
  create_task: TASK_TOOLS.create_task,
  get_task: TASK_TOOLS.get_task,
  list_tasks: TASK_TOOLS.list_tasks,
  update_task: TASK_TOOLS.update_task,
  request_approval: TASK_TOOLS.request_approval,
  claim_task: TASK_TOOLS.claim_task,
  heartbeat_task: TASK_TOOLS.heartbeat_task,
  acquire_lease: LEASE_TOOLS.acquire_lease,
  renew_lease: LEASE_TOOLS.renew_lease,
  release_lease: LEASE_TOOLS.release_lease,
  list_leases: LEASE_TOOLS.list_leases,
  read_thread: SOCIAL_TOOLS.read_thread,
  read_audit: AUDIT_TOOLS.read_audit,
};

export type ToolName = keyof typeof TOOLS;

/** The tools as `tools/list` gives them: computed once, the input schemas are plain JSON Schema. */
export const TOOL_LIST = Object.entries(TOOLS).map(([name, tool]) => ({
  name,
  title: tool.title,
  description: tool.description,
  inputSchema: JSON.parse(JSON.stringify(tool.input)) as { type: 'object'; [key: string]: unknown },
  annotations: { title: tool.title, readOnlyHint: tool.readOnly, openWorldHint: false },
}));

const validators = Object.fromEntries(Object.entries(TOOLS).map(([name, tool]) => [name, compile(tool.input)])) as {
  [N in ToolName]: ReturnType<typeof compile<(typeof TOOLS)[N]['input']>>;
};

export const isToolName = (name: string): name is ToolName => Object.hasOwn(TOOLS, name);

/** A failure as a model can act on it: the code first, then the message and each field's problem. */
function errorResult(err: unknown, call: ToolCall, name: ToolName): ToolResult {
  const error = toPublicError(err);
  if (error.status >= 500) {
    call.ctx.logger.error({ tool: name, error: { type: err instanceof Error ? err.name : typeof err, message: err instanceof Error ? err.message : String(err) } }, 'tool call failed');
  }
  const rename: Record<string, string> = TOOLS[name].fields ?? {};
  const details = error.details === undefined ? undefined : Object.fromEntries(Object.entries(error.details).map(([field, problem]) => [rename[field] ?? field, problem]));
  const detailsText = details === undefined ? '' : ` (${Object.entries(details).map(([field, problem]) => `${field} ${detailText(problem)}`).join('; ')})`;
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code}: ${error.message}${detailsText}` }],
    structuredContent: { error: { code: error.code, message: error.message, ...(details ? { details } : {}) } },
  };
}

export async function callTool(name: ToolName, rawArgs: unknown, call: ToolCall): Promise<ToolResult> {
  const tool = TOOLS[name] as ToolSpec<TProperties>;
  try {
    const parsed = validators[name].parse(rawArgs ?? {});
    const { data, text, content } = await tool.run(parsed, call);
    return { structuredContent: data, content: content ?? [{ type: 'text', text }] };
  } catch (err) {
    const details = err instanceof AppError && err.code === 'FORBIDDEN' ? err.details : undefined;
    const scope = typeof details?.scope === 'string' ? /^(\S+) required$/.exec(details.scope)?.[1] : undefined;
    if (scope !== undefined) call.scopeRefused?.(scope);
    return errorResult(err, call, name);
  }
}
