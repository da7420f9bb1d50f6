#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { buildConfig, ConfigError } from '../config/config.js';
import { readClientEnv, readEnv } from '../config/env.js';
import { AppError, type ErrorDetails } from '../errors.js';

const USAGE = `Usage: ams <command> [options]

Commands:
  serve
      Start the server (the same as npm start), configured by the environment.
  admin create --name <name> [--display-name <text>]
      Create an admin agent and print it with a fresh API token (shown once).
  token issue --agent <agent-id> [--expires-at <ISO timestamp>]
      Issue an API token for an existing agent and print it (shown once).
  migrate
      Apply database migrations and exit.
  mcp
      The service's MCP tools over stdio, for MCP clients that start a process: relays to the
      running service at AMS_URL (its /mcp) with the API token AMS_API_TOKEN.

Options:
  -h, --help     print this help
  --version      print the version

The database is the one configured by DATABASE_URL (default sqlite:./data/ams.sqlite).
Exit codes: 0 done, 1 error, 2 usage mistake.`;

/** Each command, the options it takes, and how the domain's field names read on the command line. */
const COMMANDS = {
  serve: { options: [], fields: {} },
  'admin create': { options: ['name', 'display-name'], fields: { name: '--name', displayName: '--display-name' } },
  'token issue': { options: ['agent', 'expires-at'], fields: { id: '--agent', expiresAt: '--expires-at' } },
  migrate: { options: [], fields: {} },
  mcp: { options: [], fields: {} },
} as const satisfies Record<string, { options: readonly string[]; fields: Record<string, string> }>;
type Command = keyof typeof COMMANDS;

/** A mistake in the command line itself: exit code 2. */
class UsageError extends Error {}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        'display-name': { type: 'string' },
        agent: { type: 'string' },
        'expires-at': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (err) {
    // An unknown option or a missing option value. Node's message for the first goes on to explain
    // `--`, which is beside the point here.
    const message = err instanceof Error ? err.message : String(err);
    const unknown = /^Unknown option '([^']+)'/.exec(message);
    throw new UsageError(unknown ? `unknown option ${unknown[1]}` : message);
  }
}

function packageVersion(): string {
  // dist/cli/main.js -> the package root, in the repository and in an installed package alike.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

function required(value: string | undefined, option: string, command: Command): string {
  if (value === undefined || value === '') throw new UsageError(`${command} needs ${option}`);
  return value;
}

/** A validation error as the user typed it: `--agent must be a UUID`, not the domain's `id`. */
function describeError(err: AppError, command: Command): string {
  if (!err.details) return err.message;
  const fields: Record<string, string> = COMMANDS[command].fields;
  const details: ErrorDetails = err.details;
  return Object.entries(details)
    .map(([field, message]) => `${fields[field] ?? field} ${message}`)
    .join('; ');
}

/** The exit code, or null while the server started by `serve` runs. */
async function run(argv: string[]): Promise<number | null> {
  const { values, positionals } = parseCommandLine(argv);
  const typed = positionals.join(' ');
  if (values.version) {
    console.log(packageVersion());
    return 0;
  }
  if (values.help || typed === '' || typed === 'help') {
    console.log(USAGE);
    return 0;
  }
  if (!Object.hasOwn(COMMANDS, typed)) throw new UsageError(`unknown command "${typed}"`);
  const command = typed as Command;
  const allowed: readonly string[] = COMMANDS[command].options;
  const stray = Object.keys(values).find((option) => !allowed.includes(option));
  if (stray !== undefined) throw new UsageError(`${command} takes no --${stray}`);

  if (command === 'serve') {
    // The server's own entry point: it reports its errors and exits by itself.
    const { serveOrExit } = await import('../serve.js');
    serveOrExit();
    return null;
  }
  if (command === 'mcp') {
    const { AMS_URL: url, AMS_API_TOKEN: apiToken } = readClientEnv();
    if (url === undefined || apiToken === undefined) throw new UsageError('mcp needs AMS_URL and AMS_API_TOKEN in the environment');
    await (await import('../mcp/stdio.js')).runStdioProxy({ url, apiToken });
    return 0;
  }
  const name = command === 'admin create' ? required(values.name, '--name <name>', command) : undefined;
  const agentId = command === 'token issue' ? required(values.agent, '--agent <agent-id>', command) : undefined;

  // The command line signs no JWT, so it needs no JWT_SECRET, even with PostgreSQL.
  const config = buildConfig(readEnv(), { requireJwtSecret: false });
  // Loaded only for the commands that use them, so --help, --version and mistakes answer at once.
  const [{ createAgentsService }, { createAuthz }, { createTokensService }, { nullPublisher }, { createLogger }, { openDatabase }] = await Promise.all([
    import('../core/agents/agents.service.js'),
    import('../core/auth/authz.js'),
    import('../core/auth/tokens.service.js'),
    import('../core/events.js'),
    import('../logger.js'),
    import('../store/database.js'),
  ]);
  const logger = createLogger('warn');
  const database = await openDatabase(config.database, logger);
  try {
    // The command line is trusted (it holds the database): it acts with open authorisation.
    const authz = createAuthz('open');
    const agents = createAgentsService({ db: database.db, authz });
    const tokens = createTokensService({ db: database.db, authz, events: nullPublisher });
    if (name !== undefined) {
      const agent = await agents.create(null, { name, displayName: values['display-name'] ?? name, role: 'admin' });
      const token = await tokens.issue(null, agent.id, {});
      console.log(JSON.stringify({ agent, token }, null, 2));
    } else if (agentId !== undefined) {
      const token = await tokens.issue(null, agentId, values['expires-at'] !== undefined ? { expiresAt: values['expires-at'] } : {});
      console.log(JSON.stringify(token, null, 2));
    } else {
      console.log('migrations applied');
    }
    return 0;
  } catch (err) {
    if (err instanceof AppError) {
      console.error(`ams: ${describeError(err, command)}`);
      return 1;
    }
    throw err;
  } finally {
    await database.close();
  }
}

run(process.argv.slice(2)).then(
  (code) => {
    if (code !== null) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      console.error(`ams: ${err.message} (ams --help for usage)`);
      process.exit(2);
    }
    if (err instanceof ConfigError) {
      console.error(`ams: configuration error: ${err.message}`);
      process.exit(1);
    }
    console.error(`ams: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
