import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { readClientEnv, required, type Command, type CommandInput } from '@agent-messaging/client/cli';
import { buildConfig, type DatabaseConfig } from '../config/config.js';
import { readEnv } from '../config/env.js';
import { AppError } from '../errors.js';

/**
 * The commands that work on the database itself (DATABASE_URL), with no server running: the way in
 * for the first admin of a strict-mode deployment, and migrations. They act with open authorisation:
 * whoever holds the database is trusted.
 */

/** The database as an operator recognises it: SQLite's absolute path, PostgreSQL's URL without its password. */
export function describeDatabase(database: DatabaseConfig): string {
  if (database.kind === 'sqlite') return database.path === ':memory:' ? 'SQLite in memory' : `SQLite ${resolve(database.path)}`;
  const url = new URL(database.url);
  if (url.password !== '') url.password = '***';
  return `PostgreSQL ${url.toString()}`;
}

/**
 * A missing SQLite file is almost always the wrong folder or a DATABASE_URL left unset (the
 * default, ./data/ams.sqlite, is relative to the current folder): opening it would make a new,
 * empty database, and the token printed would be one the running server does not know. So the
 * commands that write into the database refuse it unless told to create it (docs/deployment.md).
 */
function refuseMissingDatabase(database: DatabaseConfig, create: boolean, createOption: boolean): void {
  if (create || database.kind !== 'sqlite' || database.path === ':memory:' || existsSync(database.path)) return;
  const amsUrl = readClientEnv().AMS_URL;
  // An AppError is reported by main.ts as one `ams:` line with exit code 1.
  throw new AppError('NOT_FOUND',
    `no database at ${resolve(database.path)} (DATABASE_URL ${readEnv().DATABASE_URL === undefined ? 'unset: the default ./data/ams.sqlite of the current folder' : 'names it'}). ` +
    `Set DATABASE_URL to the database the server uses${createOption ? ', or pass --create-database to make a new one' : ''}` +
    (amsUrl === undefined ? '.' : `; this command works on the database, not on the server at AMS_URL (${amsUrl}).`),
  );
}

/** Runs `work` on the database DATABASE_URL names; says on stderr which one it used. */
async function withServices<T>(input: CommandInput, options: { missing: 'create' | 'refuse' | 'create-with-option' }, work: (services: Awaited<ReturnType<typeof openServices>>) => Promise<T>): Promise<T> {
  // The command line signs no JWT, so it needs no JWT_SECRET, even with PostgreSQL.
  const config = buildConfig(readEnv(), { requireJwtSecret: false });
  if (options.missing !== 'create') {
    refuseMissingDatabase(config.database, input.values['create-database'] === true, options.missing === 'create-with-option');
  }
  const services = await openServices(config.database);
  try {
    const result = await work(services);
    console.error(`ams: database: ${describeDatabase(config.database)}`);
    return result;
  } finally {
    await services.close();
  }
}

async function openServices(databaseConfig: DatabaseConfig) {
  // Loaded only for the commands that use them, so --help, --version and mistakes answer at once.
  const [{ createAgentsService }, { createAuthz }, { createTokensService }, { nullPublisher }, { createLogger }, { openDatabase }] = await Promise.all([
    import('../core/agents/agents.service.js'),
    import('../core/authz/authz.js'),
    import('../core/auth/tokens.service.js'),
    import('../core/events.js'),
    import('../logger.js'),
    import('../store/database.js'),
  ]);
  const database = await openDatabase(databaseConfig, createLogger('warn'));
  const authz = createAuthz('open');
  return {
    agents: createAgentsService({ db: database.db, authz }),
    tokens: createTokensService({ db: database.db, authz, events: nullPublisher }),
    close: () => database.close(),
  };
}

export const DATABASE_COMMANDS: Record<string, Command> = {
  serve: {
    usage: 'serve',
    summary: 'Start the server (the same as npm start), configured by the environment.',
    options: [],
    async run() {
      // The server's own entry point: it reports its errors and exits by itself.
      const { serveOrExit } = await import('../serve.js');
      serveOrExit();
      return null;
    },
  },
  'admin create': {
    usage: 'admin create --name <name> [--display-name <text>] [--create-database]',
    summary: 'Create an admin agent in the database (DATABASE_URL; a missing SQLite file only with --create-database) and print it with a fresh API token (shown once).',
    options: ['name', 'display-name', 'create-database'],
    fields: { name: '--name', displayName: '--display-name' },
    async run(input: CommandInput) {
      const name = required(input, 'name', '--name <name>');
      const displayName = typeof input.values['display-name'] === 'string' ? input.values['display-name'] : name;
      return withServices(input, { missing: 'create-with-option' }, async ({ agents, tokens }) => {
        const agent = await agents.create(null, { name, displayName, role: 'admin' });
        const token = await tokens.issue(null, agent.id, {});
        console.log(JSON.stringify({ agent, token }, null, 2));
        return 0;
      });
    },
  },
  'token issue': {
    usage: 'token issue --agent <agent-id> [--expires-at <ISO timestamp>]',
    summary: 'Issue an API token for an existing agent, in the database (DATABASE_URL), and print it (shown once).',
    options: ['agent', 'expires-at'],
    fields: { id: '--agent', expiresAt: '--expires-at' },
    async run(input: CommandInput) {
      const agentId = required(input, 'agent', '--agent <agent-id>');
      const expiresAt = input.values['expires-at'];
      return withServices(input, { missing: 'refuse' }, async ({ tokens }) => {
        const token = await tokens.issue(null, agentId, typeof expiresAt === 'string' ? { expiresAt } : {});
        console.log(JSON.stringify(token, null, 2));
        return 0;
      });
    },
  },
  migrate: {
    usage: 'migrate',
    summary: 'Apply database migrations (creating the database if it is missing) and exit.',
    options: [],
    async run(input: CommandInput) {
      return withServices(input, { missing: 'create' }, async () => {
        console.log('migrations applied');
        return 0;
      });
    },
  },
};
