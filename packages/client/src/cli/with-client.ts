import { readClientEnv } from './env.js';
import { AmsClient, type AmsClientOptions, type Message, type Room } from '../index.js';
import { optionalString, UsageError, type CommandInput, type OptionName } from './command.js';

/**
 * What the commands on a running service share (docs/client.md): the client of `--url`/AMS_URL with
 * the API token of `--token`/AMS_API_TOKEN, a room found by id or slug, and how data is printed.
 * The commands themselves are in `<domain>-commands.ts`, put together by client-commands.ts.
 */

export const DEFAULT_URL = 'http://127.0.0.1:3000';
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Every client command takes these. */
export const CONNECTION: readonly OptionName[] = ['url', 'token'];

/** The service `--url`/AMS_URL names and the API token of `--token`/AMS_API_TOKEN. */
export function serviceOf(input: CommandInput): { url: string; apiToken: string } {
  const env = readClientEnv();
  const url = optionalString(input, 'url') ?? env.AMS_URL ?? DEFAULT_URL;
  const apiToken = optionalString(input, 'token') ?? env.AMS_API_TOKEN;
  if (apiToken === undefined || apiToken === '') throw new UsageError(`${input.command} needs --token <API token> or AMS_API_TOKEN`);
  if (!/^https?:\/\//.test(url)) throw new UsageError('--url must be an http:// or https:// URL');
  return { url, apiToken };
}

/** A client of the service `--url`/AMS_URL names, with the API token of `--token`/AMS_API_TOKEN. */
export function clientFor(input: CommandInput, options: Pick<AmsClientOptions, 'lastSeqs'> = {}): AmsClient {
  const { url, apiToken } = serviceOf(input);
  const companyId = readClientEnv().COMPANY_ID;
  return new AmsClient({ url, apiToken, ...(companyId === undefined ? {} : { companyId }), ...options });
}

/** Runs `work` with a client, closed afterwards. */
export async function withClient(input: CommandInput, work: (client: AmsClient) => Promise<number>): Promise<number> {
  const client = clientFor(input);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

/** A room by its id or slug, as an object (its slug is printed). An agent needs no such lookup: the library takes its id or name. */
export async function findRoom(client: AmsClient, ref: string): Promise<Room> {
  const rooms = await client.rooms();
  const room = rooms.find((r) => (UUID.test(ref) ? r.id === ref.toLowerCase() : r.slug === ref));
  if (!room) throw new NotFound(`room "${ref}" not found`);
  return room;
}

/** A name the user gave that the service does not know: exit 1, like the service's own 404. */
export class NotFound extends Error {}

export const json = (input: CommandInput): boolean => input.values.json === true;
export const print = (value: unknown): void => console.log(JSON.stringify(value, null, 2));

/** Rows in columns, two spaces apart. */
export function printTable(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const row of rows) console.log(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

/** Sender names for message lines, from the directory, fetched once. */
export function senderNames(client: AmsClient): (id: string) => Promise<string> {
  let names: Promise<Map<string, string>> | null = null;
  return async (id) => {
    names ??= client.directory().then((d) => new Map(d.agents.map((a) => [a.id, a.name])), () => new Map());
    const known = (await names).get(id);
    if (known === undefined) names = null; // an agent created since: ask again next time
    return known ?? id;
  };
}

export async function messageLine(m: Message, nameOf: (id: string) => Promise<string>, room?: string): Promise<string> {
  const text = m.deletedAt !== null ? '(deleted)' : `${m.body}${m.editedAt !== null ? ' (edited)' : ''}`;
  return `${m.createdAt} ${room === undefined ? '' : `${room} `}#${m.seq} ${await nameOf(m.senderId)}: ${text}`;
}
