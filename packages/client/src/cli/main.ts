#!/usr/bin/env node
import { CLIENT_COMMANDS, CLIENT_COMMANDS_TITLE } from './client-commands.js';
import { runCli } from './run.js';
import { packageVersion } from './version.js';

/** `ams` of the client package: the commands on a running service, and `ams mcp`. */
runCli({ sections: [{ title: CLIENT_COMMANDS_TITLE, commands: CLIENT_COMMANDS }], version: packageVersion(import.meta.url) });
