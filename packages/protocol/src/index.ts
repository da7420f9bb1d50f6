/**
 * `@agent-messaging/protocol`: the wire of the Agent Messaging Service, shared by the server and its
 * clients: the TypeBox schemas of every REST body and WebSocket payload, the event names, the error
 * codes and the `Text` string rule. It has no server code; the client library imports its types.
 */
export * from './text.js';
export * from './roles.js';
export * from './common.schema.js';
export * from './activity.schema.js';
export * from './agents.schema.js';
export * from './audit.schema.js';
export * from './tokens.schema.js';
export * from './directory.schema.js';
export * from './inbox.schema.js';
export * from './messages.schema.js';
export * from './rooms.schema.js';
export * from './search.schema.js';
export * from './social.schema.js';
export * from './tasks.schema.js';
export * from './leases.schema.js';
export * from './webhooks.schema.js';
export * from './files.schema.js';
export * from './events.js';

/** Where the service answers MCP over Streamable HTTP. */
export const MCP_PATH = '/mcp';
