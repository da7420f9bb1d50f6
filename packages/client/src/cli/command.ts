import { parseArgs } from 'node:util';

/**
 * What every `ams` command is: its usage line, the options it takes, its positional arguments and
 * the function that runs it. main.ts holds the table; each file of this folder adds its commands.
 */

/** A mistake in the command line itself: exit code 2. */
export class UsageError extends Error {}

/** Every option of every command (parseArgs needs their types up front); each command names the ones it takes. */
export const OPTIONS = {
  name: { type: 'string' },
  'display-name': { type: 'string' },
  description: { type: 'string' },
  skills: { type: 'string' },
  role: { type: 'string' },
  agent: { type: 'string' },
  'expires-at': { type: 'string' },
  slug: { type: 'string' },
  members: { type: 'string' },
  room: { type: 'string' },
  wait: { type: 'string' },
  limit: { type: 'string' },
  text: { type: 'string' },
  event: { type: 'string' },
  actor: { type: 'string' },
  subject: { type: 'string' },
  before: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  data: { type: 'string' },
  attach: { type: 'string' },
  'content-type': { type: 'string' },
  output: { type: 'string', short: 'o' },
  force: { type: 'boolean' },
  json: { type: 'boolean' },
  stream: { type: 'boolean' },
  attention: { type: 'boolean' },
  awaiting: { type: 'boolean' },
  as: { type: 'string' },
  state: { type: 'string' },
  kind: { type: 'string' },
  comment: { type: 'string' },
  message: { type: 'string' },
  queue: { type: 'string' },
  lease: { type: 'string' },
  'max-attempts': { type: 'string' },
  ttl: { type: 'string' },
  shared: { type: 'boolean' },
  reason: { type: 'string' },
  resource: { type: 'string' },
  'create-database': { type: 'boolean' },
  format: { type: 'string' },
  'retention-days': { type: 'string' },
  'legal-hold': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
} as const;
export type OptionName = keyof typeof OPTIONS;
export type OptionValues = Partial<Record<OptionName, string | boolean>>;

export interface CommandInput {
  /** The command's name as typed, e.g. `rooms add-member`. */
  command: string;
  values: OptionValues;
  /** The positional arguments after the command's name. */
  args: string[];
}

export interface Command {
  /** The usage line after `ams `, e.g. `send ROOM TEXT [--json]`. */
  usage: string;
  summary: string;
  /** The options it takes (`--help` always). */
  options: readonly OptionName[];
  /** Its positional arguments: their count is checked (the last may take the rest with `...`). */
  args?: readonly string[];
  /** How the service's field names read on this command line, for validation messages (`displayName` -> `--display-name`). */
  fields?: Record<string, string>;
  /** The exit code, or null while it keeps running (serve). */
  run(input: CommandInput): Promise<number | null>;
}

export function parseCommandLine(argv: string[]): { values: OptionValues; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
    return { values: values as OptionValues, positionals };
  } catch (err) {
    // An unknown option or a missing option value. Node's message for the first goes on to explain
    // `--`, which is beside the point here.
    const message = err instanceof Error ? err.message : String(err);
    const unknown = /^Unknown option '([^']+)'/.exec(message);
    throw new UsageError(unknown ? `unknown option ${unknown[1]}` : message);
  }
}

/** A string option the command needs. */
export function required(input: CommandInput, option: OptionName, display = `--${option} <${option}>`): string {
  const value = input.values[option];
  if (typeof value !== 'string' || value === '') throw new UsageError(`${input.command} needs ${display}`);
  return value;
}

export function optionalString(input: CommandInput, option: OptionName): string | undefined {
  const value = input.values[option];
  return typeof value === 'string' ? value : undefined;
}

/**
 * `--data <json>` and `--attach <id,id>` of a send, as the client's send options take them; the
 * service checks them (their rules in docs/protocol.md, Messages).
 */
export function sendExtras(input: CommandInput): { data?: Record<string, unknown>; attachments?: string[] } {
  const out: { data?: Record<string, unknown>; attachments?: string[] } = {};
  const data = optionalString(input, 'data');
  if (data !== undefined) {
    try {
      out.data = JSON.parse(data) as Record<string, unknown>;
    } catch (err) {
      throw new UsageError(`--data must be JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  const attach = optionalString(input, 'attach');
  if (attach !== undefined) out.attachments = attach.split(',').map((id) => id.trim()).filter((id) => id !== '');
  return out;
}

/** A whole-number option or argument. */
export function wholeNumber(value: string | undefined, what: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > max) throw new UsageError(`${what} must be a whole number${max < Number.MAX_SAFE_INTEGER ? ` from 0 to ${max}` : ''}`);
  return Number(value);
}

/** The help of one command. */
export function commandHelp(name: string, command: Command): string {
  const options = command.options.map((o) => `--${o}`).join(', ');
  return `Usage: ams ${command.usage}\n\n${command.summary}\n${options === '' ? '' : `\nOptions: ${options}, --help\n`}`;
}
