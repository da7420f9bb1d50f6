#!/usr/bin/env node
import { CLIENT_COMMANDS, CLIENT_COMMANDS_TITLE, packageVersion, runCli } from '@agent-messaging/client/cli';
import { ConfigError } from '../config/config.js';
import { AppError } from '../errors.js';
import { DATABASE_COMMANDS } from './database-commands.js';

/**
 * The server's `ams`: its commands on the database (`admin create`, `migrate`, `serve`) beside the
 * client package's commands on a running service. A new command is an entry in one of the tables.
 */
runCli({
  sections: [
    { title: 'Commands on the database (DATABASE_URL, default sqlite:./data/ams.sqlite):', commands: DATABASE_COMMANDS },
    { title: CLIENT_COMMANDS_TITLE, commands: CLIENT_COMMANDS },
  ],
  version: packageVersion(import.meta.url),
  describeError: (err) => {
    if (err instanceof AppError) return { message: err.message, details: err.details };
    if (err instanceof ConfigError) return { message: `configuration error: ${err.message}` };
    return null;
  },
});
