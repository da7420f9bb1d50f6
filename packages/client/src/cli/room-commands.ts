import { once } from 'node:events';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { optionalString, UsageError, type Command } from './command.js';
import { CONNECTION, findRoom, json, print, printTable, withClient } from './with-client.js';

/** Rooms, their members and activity (docs/client.md): a ROOM is an id or a slug, an AGENT an id or a name. */

export const roomCommands: Record<string, Command> = {
  'rooms list': {
    usage: 'rooms list [--json]',
    summary: 'The rooms the agent sees, with its unread counts.',
    options: [...CONNECTION, 'json'],
    run: (input) => withClient(input, async (client) => {
      const rooms = await client.rooms();
      if (json(input)) print(rooms);
      else printTable([['ID', 'SLUG', 'LAST SEQ', 'UNREAD', 'NAME'], ...rooms.map((r) => [r.id, r.slug, String(r.lastSeq), r.unreadCount === undefined ? '-' : String(r.unreadCount), r.name])]);
      return 0;
    }),
  },
  'rooms create': {
    usage: 'rooms create SLUG [--name <text>] [--members <agent,agent,...>]',
    summary: 'Create a room (admin) and print it as JSON; the agent and --members (ids or names) become members.',
    options: [...CONNECTION, 'name', 'members', 'json'],
    args: ['SLUG'],
    fields: { slug: 'SLUG', name: '--name', members: '--members' },
    run: (input) => withClient(input, async (client) => {
      const slug = input.args[0]!;
      const members = (optionalString(input, 'members') ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '');
      print(await client.createRoom({ slug, name: optionalString(input, 'name') ?? slug, ...(members.length > 0 ? { members } : {}) }));
      return 0;
    }),
  },
  'rooms add-member': {
    usage: 'rooms add-member ROOM AGENT',
    summary: 'Add an agent (id or name) to a room (id or slug); admin in strict mode.',
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'AGENT'],
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      const membership = await client.addMember(room.id, input.args[1]!);
      if (json(input)) print(membership);
      else console.log(`added ${input.args[1]!} to ${room.slug}`);
      return 0;
    }),
  },
  'rooms remove-member': {
    usage: 'rooms remove-member ROOM AGENT',
    summary: 'Remove an agent (id or name) from a room (id or slug); admin in strict mode.',
    options: CONNECTION,
    args: ['ROOM', 'AGENT'],
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      await client.removeMember(room.id, input.args[1]!);
      console.log(`removed ${input.args[1]!} from ${room.slug}`);
      return 0;
    }),
  },
  'rooms update': {
    usage: 'rooms update ROOM [--retention-days <1..36500|default>] [--legal-hold on|off]',
    summary: 'Set a group room\'s retention (whole days; default: the service\'s RETENTION_DAYS) and legal hold (admin); print the room as JSON.',
    options: [...CONNECTION, 'retention-days', 'legal-hold', 'json'],
    args: ['ROOM'],
    fields: { retentionDays: '--retention-days', legalHold: '--legal-hold' },
    run: (input) => withClient(input, async (client) => {
      const changes: { retentionDays?: number | null; legalHold?: boolean } = {};
      const days = optionalString(input, 'retention-days');
      if (days !== undefined) {
        if (days === 'default') changes.retentionDays = null;
        else if (/^\d{1,6}$/.test(days)) changes.retentionDays = Number(days);
        else throw new UsageError('--retention-days must be a whole number of days (1..36500) or default');
      }
      const hold = optionalString(input, 'legal-hold');
      if (hold !== undefined) {
        if (hold !== 'on' && hold !== 'off') throw new UsageError('--legal-hold must be on or off');
        changes.legalHold = hold === 'on';
      }
      if (Object.keys(changes).length === 0) throw new UsageError('rooms update needs --retention-days or --legal-hold');
      print(await client.updateRoom(input.args[0]!, changes));
      return 0;
    }),
  },
  export: {
    usage: 'export ROOM [--format ndjson|markdown]',
    summary: 'Write a room\'s export to stdout (redirect it to a file): NDJSON, a {room} line then one message a line in seq order, or a Markdown transcript; streamed, never whole in memory.',
    options: [...CONNECTION, 'format'],
    args: ['ROOM'],
    fields: { format: '--format' },
    run: (input) => withClient(input, async (client) => {
      const format = optionalString(input, 'format') ?? 'ndjson';
      if (format !== 'ndjson' && format !== 'markdown') throw new UsageError('--format must be ndjson or markdown');
      const body = await client.exportRoom(input.args[0]!, format);
      // Read only as fast as stdout takes it.
      for await (const chunk of Readable.fromWeb(body as WebReadableStream<Uint8Array>)) {
        if (!process.stdout.write(chunk as Uint8Array)) await once(process.stdout, 'drain');
      }
      return 0;
    }),
  },
  activity: {
    usage: 'activity ROOM typing|working|idle [--text <text>]',
    summary: 'Show a room\'s members what you are doing: typing (8 s), working (120 s, --text up to 80 characters saying at what) or idle.',
    options: [...CONNECTION, 'text'],
    args: ['ROOM', 'STATE'],
    fields: { state: 'STATE', text: '--text' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      const state = input.args[1]!;
      if (state !== 'typing' && state !== 'working' && state !== 'idle') throw new UsageError('STATE must be typing, working or idle');
      await client.setActivity(room.id, state, optionalString(input, 'text'));
      console.log(`${state} in ${room.slug}`);
      return 0;
    }),
  },
};
