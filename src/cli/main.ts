#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { AmsError } from '../client/errors.js';
import { ConfigError } from '../config/config.js';
import { AppError, type ErrorDetails } from '../errors.js';
import { NotFound, CLIENT_COMMANDS } from './client-commands.js';
import { commandHelp, parseCommandLine, UsageError, type Command } from './command.js';
import { DATABASE_COMMANDS } from './database-commands.js';

/**
 * `ams`: the command table, the parsing every command shares, and the exit codes (0 done, 1 error,
 * 2 usage mistake; an error is one `ams: ...` line on stderr). A new command is an entry in one of
 * the tables below (or a new file's table added to COMMANDS).
 */
const COMMANDS: Record<string, Command> = { ...DATABASE_COMMANDS, ...CLIENT_COMMANDS };

function usage(): string {
  const lines = (names: string[]): string => names.map((name) => `  ${COMMANDS[name]!.usage}\n      ${COMMANDS[name]!.summary}`).join('\n');
  return `Usage: ams <command> [options]

Commands on the database (DATABASE_URL, default sqlite:./data/ams.sqlite):
${lines(Object.keys(DATABASE_COMMANDS))}

Commands on a running service (--url or AMS_URL, default http://127.0.0.1:3000; --token or
AMS_API_TOKEN, an API token; a ROOM is an id or a slug, an AGENT an id or a name):
${lines(Object.keys(CLIENT_COMMANDS))}

Options:
  -h, --help     print this help (ams <command> --help: that command's)
  --version      print the version
  --json         print data as JSON (tail: one JSON object a line)

Exit codes: 0 done, 1 error, 2 usage mistake.`;
}

function packageVersion(): string {
  // dist/cli/main.js -> the package root, in the repository and in an installed package alike.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** The command named by the first positional words (`rooms list`, `send`), and the rest. */
function findCommand(positionals: string[]): { name: string; args: string[] } | null {
  for (const words of [2, 1]) {
    const name = positionals.slice(0, words).join(' ');
    if (positionals.length >= words && Object.hasOwn(COMMANDS, name)) return { name, args: positionals.slice(words) };
  }
  return null;
}

function checkArgs(name: string, command: Command, args: string[]): void {
  const wanted = command.args ?? [];
  const rest = wanted.at(-1)?.endsWith('...') ?? false;
  const enough = args.length >= wanted.length;
  if (!enough) throw new UsageError(`${name} needs ${wanted.join(' ')}`);
  if (!rest && args.length > wanted.length) throw new UsageError(wanted.length === 0 ? `${name} takes no arguments` : `${name} takes ${wanted.join(' ')} only`);
}

/** A validation error as the user typed it: `--agent must be a UUID`, not the domain's `id`. */
function describeError(message: string, details: ErrorDetails | undefined, command: Command | undefined): string {
  if (!details) return message;
  const fields = command?.fields ?? {};
  return Object.entries(details).map(([field, problem]) => `${fields[field] ?? field} ${problem}`).join('; ');
}

/** The exit code, or null while the server started by `serve` runs. */
async function run(argv: string[]): Promise<number | null> {
  const { values, positionals } = parseCommandLine(argv);
  if (values.version) {
    console.log(packageVersion());
    return 0;
  }
  if (positionals.length === 0 || (positionals.length === 1 && positionals[0] === 'help')) {
    console.log(usage());
    return 0;
  }
  const found = findCommand(positionals);
  if (!found) {
    if (values.help) {
      console.log(usage());
      return 0;
    }
    throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
  const command = COMMANDS[found.name]!;
  if (values.help) {
    console.log(commandHelp(found.name, command));
    return 0;
  }
  const allowed: readonly string[] = command.options;
  const stray = Object.keys(values).find((option) => !allowed.includes(option));
  if (stray !== undefined) throw new UsageError(`${found.name} takes no --${stray}`);
  checkArgs(found.name, command, found.args);
  try {
    return await command.run({ command: found.name, values, args: found.args });
  } catch (err) {
    if (err instanceof AppError || err instanceof AmsError) {
      console.error(`ams: ${describeError(err.message, err.details, command)}`);
      return 1;
    }
    if (err instanceof NotFound) {
      console.error(`ams: ${err.message}`);
      return 1;
    }
    throw err;
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
