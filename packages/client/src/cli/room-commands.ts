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
