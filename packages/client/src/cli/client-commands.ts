import { readClientEnv } from './env.js';
import { AmsClient, type AgentSkill, type AgentUpdate, type AmsClientOptions, type AuditQuery, type Message, type Room } from '../index.js';
import { optionalString, required, UsageError, wholeNumber, type Command, type CommandInput, type OptionName } from './command.js';

/**
 * The commands that talk to a running service through the client library (docs/client.md):
 * `--url` or AMS_URL, `--token` or AMS_API_TOKEN; a room named by id or slug, an agent by id or name.
 */

const DEFAULT_URL = 'http://127.0.0.1:3000';
const TAIL_BACKLOG = 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Every client command takes these. */
const CONNECTION: readonly OptionName[] = ['url', 'token'];

/** The service `--url`/AMS_URL names and the API token of `--token`/AMS_API_TOKEN. */
function serviceOf(input: CommandInput): { url: string; apiToken: string } {
  const env = readClientEnv();
  const url = optionalString(input, 'url') ?? env.AMS_URL ?? DEFAULT_URL;
  const apiToken = optionalString(input, 'token') ?? env.AMS_API_TOKEN;
  if (apiToken === undefined || apiToken === '') throw new UsageError(`${input.command} needs --token <API token> or AMS_API_TOKEN`);
  if (!/^https?:\/\//.test(url)) throw new UsageError('--url must be an http:// or https:// URL');
  return { url, apiToken };
}

/** A client of the service `--url`/AMS_URL names, with the API token of `--token`/AMS_API_TOKEN. */
function clientFor(input: CommandInput, options: Pick<AmsClientOptions, 'lastSeqs'> = {}): AmsClient {
  const { url, apiToken } = serviceOf(input);
  const companyId = readClientEnv().COMPANY_ID;
  return new AmsClient({ url, apiToken, ...(companyId === undefined ? {} : { companyId }), ...options });
}

/** Runs `work` with a client, closed afterwards. */
async function withClient(input: CommandInput, work: (client: AmsClient) => Promise<number>): Promise<number> {
  const client = clientFor(input);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

async function findRoom(client: AmsClient, ref: string): Promise<Room> {
  const rooms = await client.rooms();
  const room = rooms.find((r) => (UUID.test(ref) ? r.id === ref.toLowerCase() : r.slug === ref));
  if (!room) throw new NotFound(`room "${ref}" not found`);
  return room;
}

async function findAgentId(client: AmsClient, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref.toLowerCase();
  const agent = (await client.directory()).agents.find((a) => a.name === ref);
  if (!agent) throw new NotFound(`agent "${ref}" not found`);
  return agent.id;
}

/** A name the user gave that the service does not know: exit 1, like the service's own 404. */
export class NotFound extends Error {}

const json = (input: CommandInput): boolean => input.values.json === true;
const print = (value: unknown): void => console.log(JSON.stringify(value, null, 2));

/** Rows in columns, two spaces apart. */
function printTable(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const row of rows) console.log(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}

/** Sender names for message lines, from the directory, fetched once. */
function senderNames(client: AmsClient): (id: string) => Promise<string> {
  let names: Promise<Map<string, string>> | null = null;
  return async (id) => {
    names ??= client.directory().then((d) => new Map(d.agents.map((a) => [a.id, a.name])), () => new Map());
    const known = (await names).get(id);
    if (known === undefined) names = null; // an agent created since: ask again next time
    return known ?? id;
  };
}

async function messageLine(m: Message, nameOf: (id: string) => Promise<string>, room?: string): Promise<string> {
  const text = m.deletedAt !== null ? '(deleted)' : `${m.body}${m.editedAt !== null ? ' (edited)' : ''}`;
  return `${m.createdAt} ${room === undefined ? '' : `${room} `}#${m.seq} ${await nameOf(m.senderId)}: ${text}`;
}

/** How `ams --help` introduces these commands. */
export const CLIENT_COMMANDS_TITLE = `Commands on a running service (--url or AMS_URL, default ${DEFAULT_URL}; --token or
AMS_API_TOKEN, an API token; a ROOM is an id or a slug, an AGENT an id or a name):`;

export const CLIENT_COMMANDS: Record<string, Command> = {
  'agents list': {
    usage: 'agents list [--json]',
    summary: 'The agents of the service (admin in strict mode).',
    options: [...CONNECTION, 'json'],
    run: (input) => withClient(input, async (client) => {
      const agents = await client.agents();
      if (json(input)) print(agents);
      else printTable([['ID', 'NAME', 'ROLE', 'STATE', 'DISPLAY NAME'], ...agents.map((a) => [a.id, a.name, a.role, a.disabledAt === null ? 'active' : 'disabled', a.displayName])]);
      return 0;
    }),
  },
  'agents create': {
    usage: 'agents create --name <name> [--display-name <text>] [--role admin|agent]',
    summary: 'Create an agent (admin in strict mode) and print it as JSON.',
    options: [...CONNECTION, 'name', 'display-name', 'role', 'json'],
    fields: { name: '--name', displayName: '--display-name', role: '--role' },
    run(input) {
      const name = required(input, 'name', '--name <name>');
      const role = optionalString(input, 'role') ?? 'agent';
      if (role !== 'admin' && role !== 'agent') throw new UsageError('--role must be admin or agent');
      return withClient(input, async (client) => {
        print(await client.createAgent({ name, displayName: optionalString(input, 'display-name') ?? name, role }));
        return 0;
      });
    },
  },
  'agents update': {
    usage: "agents update AGENT [--display-name <text>] [--description <text>] [--skills '<JSON array>']",
    summary: 'Change an agent\'s display name, description or skills (the agent itself or an admin) and print it as JSON; --skills replaces them all: [{"id", "name", "description"?, "tags"?}].',
    options: [...CONNECTION, 'display-name', 'description', 'skills', 'json'],
    args: ['AGENT'],
    fields: { displayName: '--display-name', description: '--description', skills: '--skills', body: 'the command line' },
    run(input) {
      const changes: AgentUpdate = {};
      const displayName = optionalString(input, 'display-name');
      const description = optionalString(input, 'description');
      const skills = optionalString(input, 'skills');
      if (displayName !== undefined) changes.displayName = displayName;
      if (description !== undefined) changes.description = description;
      if (skills !== undefined) {
        try {
          changes.skills = JSON.parse(skills) as AgentSkill[];
        } catch {
          throw new UsageError('--skills must be a JSON array of {"id", "name", "description"?, "tags"?}');
        }
      }
      if (Object.keys(changes).length === 0) throw new UsageError('agents update needs --display-name, --description or --skills');
      return withClient(input, async (client) => {
        print(await client.updateAgent(await findAgentId(client, input.args[0]!), changes));
        return 0;
      });
    },
  },
  'tokens issue': {
    usage: 'tokens issue AGENT [--expires-at <ISO timestamp>]',
    summary: 'Issue an API token for an agent (id or name) and print it as JSON (the token is shown once).',
    options: [...CONNECTION, 'expires-at', 'json'],
    args: ['AGENT'],
    fields: { expiresAt: '--expires-at' },
    run: (input) => withClient(input, async (client) => {
      const expiresAt = optionalString(input, 'expires-at');
      print(await client.issueToken(await findAgentId(client, input.args[0]!), expiresAt === undefined ? {} : { expiresAt }));
      return 0;
    }),
  },
  tokens: {
    usage: 'tokens AGENT [--json]',
    summary: "An agent's (id or name) API tokens, revoked ones included, without secrets (admin); the prefix revokes one.",
    options: [...CONNECTION, 'json'],
    args: ['AGENT'],
    run: (input) => withClient(input, async (client) => {
      const tokens = await client.tokens(await findAgentId(client, input.args[0]!));
      if (json(input)) print(tokens);
      else {
        const state = (t: { revokedAt: string | null; expiresAt: string | null }): string =>
          t.revokedAt !== null ? 'revoked' : t.expiresAt !== null && new Date(t.expiresAt) <= new Date() ? 'expired' : 'active';
        printTable([['PREFIX', 'STATE', 'CREATED', 'LAST USED', 'EXPIRES', 'SCOPES'],
          ...tokens.map((t) => [t.prefix, state(t), t.createdAt, t.lastUsedAt ?? '-', t.expiresAt ?? '-', JSON.stringify(t.scopes)])]);
      }
      return 0;
    }),
  },
  'tokens revoke': {
    usage: 'tokens revoke PREFIX',
    summary: 'Revoke an API token by its prefix (agt_<12 hex>).',
    options: CONNECTION,
    args: ['PREFIX'],
    run: (input) => withClient(input, async (client) => {
      await client.revokeToken(input.args[0]!);
      console.log(`revoked ${input.args[0]!}`);
      return 0;
    }),
  },
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
      const refs = (optionalString(input, 'members') ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '');
      const members = await Promise.all(refs.map((ref) => findAgentId(client, ref)));
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
      const [room, agentId] = await Promise.all([findRoom(client, input.args[0]!), findAgentId(client, input.args[1]!)]);
      const membership = await client.addMember(room.id, agentId);
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
      const [room, agentId] = await Promise.all([findRoom(client, input.args[0]!), findAgentId(client, input.args[1]!)]);
      await client.removeMember(room.id, agentId);
      console.log(`removed ${input.args[1]!} from ${room.slug}`);
      return 0;
    }),
  },
  send: {
    usage: 'send ROOM TEXT... [--json]',
    summary: 'Send a message to a room (id or slug); prints its seq (the stored message with --json).',
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'TEXT...'],
    fields: { body: 'TEXT' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      // A send that cannot reach the service gives up after a while rather than waiting forever.
      const message = await client.send(room.id, input.args.slice(1).join(' '), { timeoutMs: 30_000 });
      if (json(input)) print(message);
      else console.log(`sent #${message.seq} to ${room.slug}`);
      return 0;
    }),
  },
  reply: {
    usage: 'reply ROOM MESSAGE_ID TEXT... [--json]',
    summary: 'Reply to a message of a room (it joins that message\'s thread); prints its seq (the stored message with --json).',
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'MESSAGE_ID', 'TEXT...'],
    fields: { body: 'TEXT', replyTo: 'MESSAGE_ID' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      const message = await client.reply(room.id, input.args[1]!, input.args.slice(2).join(' '), { timeoutMs: 30_000 });
      if (json(input)) print(message);
      else console.log(`sent #${message.seq} to ${room.slug}, in thread ${message.threadId ?? ''}`);
      return 0;
    }),
  },
  edit: {
    usage: 'edit ROOM MESSAGE_ID TEXT... [--json]',
    summary: 'Replace the text of one of your messages (the edited message with --json).',
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'MESSAGE_ID', 'TEXT...'],
    fields: { body: 'TEXT', messageId: 'MESSAGE_ID' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      const message = await client.edit(room.id, input.args[1]!, input.args.slice(2).join(' '));
      if (json(input)) print(message);
      else console.log(`edited #${message.seq} in ${room.slug}`);
      return 0;
    }),
  },
  delete: {
    usage: 'delete ROOM MESSAGE_ID',
    summary: 'Delete one of your messages (an admin: any message of a group room); it stays as "deleted".',
    options: [...CONNECTION],
    args: ['ROOM', 'MESSAGE_ID'],
    fields: { messageId: 'MESSAGE_ID' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      await client.delete(room.id, input.args[1]!);
      console.log(`deleted ${input.args[1]!} in ${room.slug}`);
      return 0;
    }),
  },
  dm: {
    usage: 'dm AGENT TEXT... [--json]',
    summary: 'Send a direct message to an agent (id or name), opening your direct room with it the first time; prints its seq and room (the message and room with --json).',
    options: [...CONNECTION, 'json'],
    args: ['AGENT', 'TEXT...'],
    fields: { body: 'TEXT', agentId: 'AGENT' },
    run: (input) => withClient(input, async (client) => {
      const agentId = await findAgentId(client, input.args[0]!);
      // As send: gives up after a while rather than waiting forever for an unreachable service.
      const { message, room } = await client.dm(agentId, input.args.slice(1).join(' '), { timeoutMs: 30_000 });
      if (json(input)) print({ message, room });
      else console.log(`sent #${message.seq} to ${input.args[0]!} (${room.slug})`);
      return 0;
    }),
  },
  tail: {
    usage: 'tail ROOM [--json]',
    summary: `Print the last ${TAIL_BACKLOG} messages of a room, then follow it live (Ctrl-C ends); --json prints one JSON object a line.`,
    options: [...CONNECTION, 'json'],
    args: ['ROOM'],
    async run(input) {
      const probe = clientFor(input);
      let room: Room;
      let backlog: Message[];
      try {
        room = await findRoom(probe, input.args[0]!);
        backlog = (await probe.history(room.id, { limit: TAIL_BACKLOG })).messages.reverse();
      } finally {
        await probe.close();
      }
      // The client resumes after the last message printed: nothing is missed or printed twice.
      const lastPrinted = backlog.at(-1)?.seq ?? room.lastSeq;
      const client = clientFor(input, { lastSeqs: { [room.id]: lastPrinted } });
      const nameOf = senderNames(client);
      let printing = Promise.resolve();
      const show = (m: Message): void => {
        printing = printing.then(async () => console.log(json(input) ? JSON.stringify(m) : await messageLine(m, nameOf)));
      };
      backlog.forEach(show);
      client.on('message', (m) => {
        if (m.roomId === room.id && m.seq > lastPrinted) show(m);
      });
      client.on('error', (err) => console.error(`ams: ${err.message}`));
      await client.connect();
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await client.close();
      await printing;
      return 0;
    },
  },
  inbox: {
    usage: 'inbox [--attention] [--wait <seconds>] [--limit <n>] [--json]',
    summary: "The agent's unread messages across its rooms, oldest first (those for its attention marked \"@\"); --attention: only those; --wait holds the request (up to 30 s) until one arrives.",
    options: [...CONNECTION, 'attention', 'wait', 'limit', 'json'],
    fields: { wait: '--wait', limit: '--limit' },
    run(input) {
      const wait = wholeNumber(optionalString(input, 'wait'), '--wait', 30);
      const limit = wholeNumber(optionalString(input, 'limit'), '--limit', 100);
      return withClient(input, async (client) => {
        const filter = input.values.attention === true ? 'attention' : undefined;
        const page = await client.inbox({ ...(wait === undefined ? {} : { wait }), ...(limit === undefined ? {} : { limit }), ...(filter === undefined ? {} : { filter }) });
        if (json(input)) {
          print(page);
          return 0;
        }
        const nameOf = senderNames(client);
        const slugs = new Map((await client.rooms()).map((r) => [r.id, r.slug]));
        for (const m of page.messages) console.log(`${m.attention ? '@ ' : ''}${await messageLine(m, nameOf, slugs.get(m.roomId) ?? m.roomId)}`);
        if (page.messages.length === 0) console.log(filter === undefined ? 'nothing unread' : 'nothing unread for your attention');
        else if (page.hasMore) console.log(`(${page.unreadTotal} unread in all, ${page.attentionTotal} for your attention)`);
        return 0;
      });
    },
  },
  read: {
    usage: 'read ROOM SEQ [--json]',
    summary: "Mark a room's messages up to SEQ as read.",
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'SEQ'],
    fields: { seq: 'SEQ' },
    run(input) {
      const seq = wholeNumber(input.args[1], 'SEQ')!;
      return withClient(input, async (client) => {
        const room = await findRoom(client, input.args[0]!);
        const cursor = await client.markRead(room.id, seq);
        if (json(input)) print(cursor);
        else console.log(`${room.slug}: read up to #${cursor.readSeq}, ${cursor.unreadCount} unread`);
        return 0;
      });
    },
  },
  mcp: {
    usage: 'mcp',
    summary: "The service's MCP tools over stdio, for MCP hosts that start a process (relayed to the service's /mcp).",
    options: [...CONNECTION],
    args: [],
    fields: {},
    async run(input) {
      // Loaded only here: the MCP SDK is not needed by the other commands.
      const { runStdioProxy } = await import('../mcp-stdio.js');
      await runStdioProxy(serviceOf(input));
      return 0;
    },
  },
  audit: {
    usage: 'audit [--event <event>] [--actor AGENT] [--subject <id>] [--before <record id>] [--limit <n>] [--json]',
    summary: 'The audit log, newest first (admins): who did what, about what (an agent, token, room, message, file or task), when; a page ending with "more" goes on with --before.',
    options: [...CONNECTION, 'event', 'actor', 'subject', 'before', 'limit', 'json'],
    args: [],
    fields: { event: '--event', actorId: '--actor', subjectId: '--subject', before: '--before', limit: '--limit' },
    run(input) {
      const limit = wholeNumber(optionalString(input, 'limit'), '--limit', 100);
      return withClient(input, async (client) => {
        const actor = optionalString(input, 'actor');
        const query: AuditQuery = {};
        for (const [field, option] of [['event', 'event'], ['subjectId', 'subject'], ['before', 'before']] as const) {
          const value = optionalString(input, option);
          if (value !== undefined) query[field] = value;
        }
        if (actor !== undefined) query.actorId = await findAgentId(client, actor);
        if (limit !== undefined) query.limit = limit;
        const page = await client.audit(query);
        if (json(input)) {
          print(page);
          return 0;
        }
        // Agents by name; any other subject (a token, room, message, ...) by its id.
        const names = new Map((await client.directory()).agents.map((a) => [a.id, a.name]));
        const nameOf = (id: string | null): string => (id === null ? '-' : (names.get(id) ?? id));
        const rows = page.records.map((r) => [r.createdAt, r.event, nameOf(r.actorId), nameOf(r.subjectId), JSON.stringify(r.detail)]);
        if (rows.length === 0) console.log('no records');
        else printTable([['TIME', 'EVENT', 'ACTOR', 'SUBJECT', 'DETAIL'], ...rows]);
        if (page.hasMore) console.log(`more: --before ${page.nextCursor ?? ''}`);
        return 0;
      });
    },
  },
  search: {
    usage: 'search QUERY... [--room ROOM] [--limit <n>] [--json]',
    summary: 'Search the messages of the agent\'s rooms (one room with --room), newest first.',
    options: [...CONNECTION, 'room', 'limit', 'json'],
    args: ['QUERY...'],
    fields: { q: 'QUERY', limit: '--limit' },
    run(input) {
      const limit = wholeNumber(optionalString(input, 'limit'), '--limit', 100);
      return withClient(input, async (client) => {
        const rooms = await client.rooms();
        const roomRef = optionalString(input, 'room');
        const roomId = roomRef === undefined ? undefined : (await findRoom(client, roomRef)).id;
        const page = await client.search(input.args.join(' '), { ...(roomId ? { roomId } : {}), ...(limit === undefined ? {} : { limit }) });
        if (json(input)) {
          print(page);
          return 0;
        }
        const nameOf = senderNames(client);
        const slugs = new Map(rooms.map((r) => [r.id, r.slug]));
        for (const m of page.results) console.log(await messageLine(m, nameOf, slugs.get(m.roomId) ?? m.roomId));
        if (page.results.length === 0) console.log('no match');
        return 0;
      });
    },
  },
};
