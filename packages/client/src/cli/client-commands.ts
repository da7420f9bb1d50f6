import type { Command } from './command.js';
import { agentCommands } from './agent-commands.js';
import { fileCommands } from './file-commands.js';
import { messageCommands } from './message-commands.js';
import { roomCommands } from './room-commands.js';
import { taskCommands } from './task-commands.js';
import { leaseCommands } from './lease-commands.js';
import { CONNECTION, DEFAULT_URL, serviceOf } from './with-client.js';

export { NotFound } from './with-client.js';

/**
 * The commands that talk to a running service through the client library (docs/client.md):
 * `--url` or AMS_URL, `--token` or AMS_API_TOKEN; a room named by id or slug, an agent by id or name.
 * Each domain's commands are a file of this folder (`agent-commands.ts`, `room-commands.ts`,
 * `message-commands.ts`, `task-commands.ts`, `file-commands.ts`), over what they share (`with-client.ts`).
 */

/** How `ams --help` introduces these commands. */
export const CLIENT_COMMANDS_TITLE = `Commands on a running service (--url or AMS_URL, default ${DEFAULT_URL}; --token or
AMS_API_TOKEN, an API token; a ROOM is an id or a slug, an AGENT an id or a name):`;

const mcpCommand: Command = {
  usage: 'mcp',
  summary: "The service's MCP tools over stdio, for MCP hosts that start a process (relayed to the service's /mcp).",
  options: [...CONNECTION],
  args: [],
  fields: {},
  async run(input) {
    // Loaded only here: the MCP SDK is not needed by the other commands.
    const { runStdioProxy } = await import('../mcp-stdio.js');
    await runStdioProxy(serviceOf(input));
    return 0;
  },
};

/** Every client command, in the order `ams --help` lists them. */
export const CLIENT_COMMANDS: Record<string, Command> = {
  ...agentCommands,
  ...roomCommands,
  ...messageCommands,
  ...taskCommands,
  ...leaseCommands,
  ...fileCommands,
  mcp: mcpCommand,
};
