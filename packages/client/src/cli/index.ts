/**
 * `@agent-messaging/client/cli`: the `ams` client commands and the runner, for a program that adds
 * commands of its own (the server's `ams` adds its database commands). Node.js only.
 */
export { CLIENT_COMMANDS, CLIENT_COMMANDS_TITLE, NotFound } from './client-commands.js';
export {
  commandHelp, optionalString, parseCommandLine, required, UsageError, wholeNumber,
  type Command, type CommandInput, type OptionName, type OptionValues,
} from './command.js';
export { readClientEnv, type ClientEnv } from './env.js';
export { runCli, type CliOptions, type CommandSection, type DescribeError } from './run.js';
export { packageVersion } from './version.js';
