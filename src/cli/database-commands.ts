import { buildConfig } from '../config/config.js';
import { readEnv } from '../config/env.js';
import { required, type Command, type CommandInput } from '@agent-messaging/client/cli';

/**
 * The commands that work on the database itself (DATABASE_URL), with no server running: the way in
 * for the first admin of a strict-mode deployment, and migrations. They act with open authorisation:
 * whoever holds the database is trusted.
 */

async function withServices<T>(work: (services: Awaited<ReturnType<typeof openServices>>) => Promise<T>): Promise<T> {
  const services = await openServices();
  try {
    return await work(services);
  } finally {
    await services.close();
  }
}

async function openServices() {
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
  const database = await openDatabase(config.database, createLogger('warn'));
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
    usage: 'admin create --name <name> [--display-name <text>]',
    summary: 'Create an admin agent in the database and print it with a fresh API token (shown once).',
    options: ['name', 'display-name'],
    fields: { name: '--name', displayName: '--display-name' },
    async run(input: CommandInput) {
      const name = required(input, 'name', '--name <name>');
      const displayName = typeof input.values['display-name'] === 'string' ? input.values['display-name'] : name;
      return withServices(async ({ agents, tokens }) => {
        const agent = await agents.create(null, { name, displayName, role: 'admin' });
        const token = await tokens.issue(null, agent.id, {});
        console.log(JSON.stringify({ agent, token }, null, 2));
        return 0;
      });
    },
  },
  'token issue': {
    usage: 'token issue --agent <agent-id> [--expires-at <ISO timestamp>]',
    summary: 'Issue an API token for an existing agent, in the database, and print it (shown once).',
    options: ['agent', 'expires-at'],
    fields: { id: '--agent', expiresAt: '--expires-at' },
    async run(input: CommandInput) {
      const agentId = required(input, 'agent', '--agent <agent-id>');
      const expiresAt = input.values['expires-at'];
      return withServices(async ({ tokens }) => {
        const token = await tokens.issue(null, agentId, typeof expiresAt === 'string' ? { expiresAt } : {});
        console.log(JSON.stringify(token, null, 2));
        return 0;
      });
    },
  },
  migrate: {
    usage: 'migrate',
    summary: 'Apply database migrations and exit.',
    options: [],
    async run() {
      return withServices(async () => {
        console.log('migrations applied');
        return 0;
      });
    },
  },
};
