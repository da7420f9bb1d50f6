#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { buildConfig, ConfigError } from '../config/config.js';
import { readEnv } from '../config/env.js';
import { createAgentsService } from '../core/agents/agents.service.js';
import { createAuthz } from '../core/auth/authz.js';
import { createTokensService } from '../core/auth/tokens.service.js';
import { nullPublisher } from '../core/events.js';
import { AppError } from '../errors.js';
import { createLogger } from '../logger.js';
import { openDatabase } from '../store/database.js';

const USAGE = `Usage: ams <command>

Commands:
  admin create --name <name> [--display-name <text>]
      Create an admin agent and print it with a fresh API token (shown once).
  token issue --agent <agent-id> [--expires-at <ISO timestamp>]
      Issue an API token for an existing agent and print it (shown once).
  migrate
      Apply database migrations and exit.

The database is the one configured by DATABASE_URL (default sqlite:./data/ams.sqlite).`;

function parseCommandLine(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      'display-name': { type: 'string' },
      agent: { type: 'string' },
      'expires-at': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

async function run(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    // An unknown option or a missing option value is a usage mistake, like an unknown command.
    console.error(`ams: ${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals.join(' ');
  if (values.help || command === '' || command === 'help') {
    console.log(USAGE);
    return 0;
  }
  if (!['admin create', 'token issue', 'migrate'].includes(command)) {
    console.error(`ams: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }

  // The command line signs no JWT, so it needs no JWT_SECRET, even with PostgreSQL.
  const config = buildConfig(readEnv(), { requireJwtSecret: false });
  const logger = createLogger('warn');
  const database = await openDatabase(config.database, logger);
  try {
    // The command line is trusted (it holds the database): it acts with open authorisation.
    const authz = createAuthz('open');
    const agents = createAgentsService({ db: database.db, authz });
    const tokens = createTokensService({ db: database.db, authz, events: nullPublisher });
    if (command === 'migrate') {
      console.log('migrations applied');
    } else if (command === 'admin create') {
      if (values.name === undefined) throw new AppError('VALIDATION_ERROR', 'admin create needs --name <name>');
      const agent = await agents.create(null, { name: values.name, displayName: values['display-name'] ?? values.name, role: 'admin' });
      const token = await tokens.issue(null, agent.id, {});
      console.log(JSON.stringify({ agent, token }, null, 2));
    } else {
      if (values.agent === undefined) throw new AppError('VALIDATION_ERROR', 'token issue needs --agent <agent-id>');
      const token = await tokens.issue(null, values.agent, values['expires-at'] ? { expiresAt: values['expires-at'] } : {});
      console.log(JSON.stringify(token, null, 2));
    }
    return 0;
  } finally {
    await database.close();
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof AppError) {
      const details = err.details ? ` ${JSON.stringify(err.details)}` : '';
      console.error(`ams: ${err.message}${details}`);
      process.exit(1);
    }
    if (err instanceof ConfigError) {
      console.error(`ams: configuration error: ${err.message}`);
      process.exit(1);
    }
    console.error(`ams: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
