import { AmsError } from '../errors.js';
import { NotFound } from './with-client.js';
import { commandHelp, parseCommandLine, UsageError, type Command } from './command.js';

/**
 * The `ams` command line's one runner: the command tables, the parsing every command shares, and
 * the exit codes (0 done, 1 error, 2 usage mistake; an error is one `ams: ...` line on stderr). The
 * client package's `ams` runs it with the client commands; the server's adds its database commands.
 */

export interface CommandSection {
  /** The heading of the section in `ams --help`. */
  title: string;
  commands: Record<string, Command>;
}

/** A failure the caller's own commands raise, told as one line; null for anything else. */
export type DescribeError = (err: unknown) => { message: string; details?: Record<string, unknown> | undefined } | null;

export interface CliOptions {
  sections: CommandSection[];
  version: string;
  /** Errors of the user's making raised by the caller's commands (the server's AppError, ConfigError). */
  describeError?: DescribeError;
}

function usage(sections: CommandSection[]): string {
  const lines = (commands: Record<string, Command>): string =>
    Object.values(commands).map((command) => `  ${command.usage}\n      ${command.summary}`).join('\n');
  return `Usage: ams <command> [options]

${sections.map((section) => `${section.title}\n${lines(section.commands)}`).join('\n\n')}

Options:
  -h, --help     print this help (ams <command> --help: that command's)
  --version      print the version
  --json         print data as JSON (tail: one JSON object a line)

Exit codes: 0 done, 1 error, 2 usage mistake.`;
}

/** The command named by the first positional words (`rooms list`, `send`), and the rest. */
function findCommand(commands: Record<string, Command>, positionals: string[]): { name: string; args: string[] } | null {
  for (const words of [2, 1]) {
    const name = positionals.slice(0, words).join(' ');
    if (positionals.length >= words && Object.hasOwn(commands, name)) return { name, args: positionals.slice(words) };
  }
  return null;
}

function checkArgs(name: string, command: Command, args: string[]): void {
  const wanted = command.args ?? [];
  const rest = /\.\.\.\]?$/.test(wanted.at(-1) ?? '');
  // `[TEXT...]`: may be absent (send --stream reads its standard input instead).
  const enough = args.length >= wanted.filter((arg) => !arg.startsWith('[')).length;
  if (!enough) throw new UsageError(`${name} needs ${wanted.join(' ')}`);
  if (!rest && args.length > wanted.length) throw new UsageError(wanted.length === 0 ? `${name} takes no arguments` : `${name} takes ${wanted.join(' ')} only`);
}

/** A validation error as the user typed it: `--agent must be a UUID`, not the domain's `id`. */
function describeDetails(message: string, details: Record<string, unknown> | undefined, command: Command | undefined): string {
  if (!details) return message;
  const fields = command?.fields ?? {};
  return Object.entries(details).map(([field, problem]) => `${fields[field] ?? field} ${typeof problem === 'string' ? problem : JSON.stringify(problem)}`).join('; ');
}

/** The exit code, or null while a command (the server's `serve`) keeps the process running. */
async function run(argv: string[], options: CliOptions): Promise<number | null> {
  const commands = Object.assign({}, ...options.sections.map((section) => section.commands)) as Record<string, Command>;
  const { values, positionals } = parseCommandLine(argv);
  if (values.version) {
    console.log(options.version);
    return 0;
  }
  if (positionals.length === 0 || (positionals.length === 1 && positionals[0] === 'help')) {
    console.log(usage(options.sections));
    return 0;
  }
  const found = findCommand(commands, positionals);
  if (!found) {
    if (values.help) {
      console.log(usage(options.sections));
      return 0;
    }
    throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
  const command = commands[found.name]!;
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
    const described = err instanceof AmsError ? { message: err.message, details: err.details } : options.describeError?.(err);
    if (described) {
      console.error(`ams: ${describeDetails(described.message, described.details, command)}`);
      return 1;
    }
    if (err instanceof NotFound) {
      console.error(`ams: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/** Runs `ams` on the process's arguments and exits with its code (unless a command keeps running). */
export function runCli(options: CliOptions): void {
  run(process.argv.slice(2), options).then(
    (code) => {
      if (code !== null) process.exit(code);
    },
    (err: unknown) => {
      if (err instanceof UsageError) {
        console.error(`ams: ${err.message} (ams --help for usage)`);
        process.exit(2);
      }
      const described = options.describeError?.(err);
      console.error(`ams: ${described ? described.message : err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
