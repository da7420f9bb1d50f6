import type { AmsClient, Message, Room } from '../index.js';
import { optionalString, sendExtras, UsageError, wholeNumber, type Command, type CommandInput } from './command.js';
import { clientFor, CONNECTION, findRoom, json, messageLine, print, senderNames, withClient } from './with-client.js';

/**
 * Messages (docs/client.md): send, reply, edit, delete, direct messages, tail, the inbox, read
 * cursors, search. A ROOM is an id or a slug, an AGENT an id or a name.
 */

const TAIL_BACKLOG = 20;

/** `send --stream`: a streamed message, each chunk of standard input appended as it arrives, ended at its end. */
async function streamStdin(client: AmsClient, roomId: string, input: CommandInput): Promise<Message> {
  const stream = await client.stream(roomId, sendExtras(input));
  // UTF-8 decoded across chunk boundaries: a character split between two chunks goes whole in the second.
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of process.stdin) {
    const text = decoder.decode(chunk as Uint8Array, { stream: true });
    if (text !== '') await stream.append(text);
  }
  const rest = decoder.decode();
  if (rest !== '') await stream.append(rest);
  return stream.end();
}

export const messageCommands: Record<string, Command> = {
  send: {
    usage: 'send ROOM [TEXT...] [--stream] [--data JSON] [--attach FILE_ID,...] [--json]',
    summary: 'Send a message to a room (id or slug), with --data a JSON object and --attach the ids of files you uploaded; prints its seq (the stored message with --json). With --stream, streams its standard input as it arrives (each chunk appended) and ends the message at the end of input (docs/streaming.md).',
    options: [...CONNECTION, 'data', 'attach', 'json', 'stream'],
    args: ['ROOM', '[TEXT...]'],
    fields: { body: 'TEXT', data: '--data', attachments: '--attach', text: 'TEXT' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      if (input.values.stream === true) {
        const message = await streamStdin(client, room.id, input);
        if (json(input)) print(message);
        else console.log(`${message.deletedAt !== null ? 'nothing to send (deleted)' : 'sent'} #${message.seq} to ${room.slug}`);
        return 0;
      }
      if (input.args.length < 2) throw new UsageError('send needs ROOM TEXT...');
      // A send that cannot reach the service gives up after a while rather than waiting forever.
      const message = await client.send(room.id, input.args.slice(1).join(' '), { ...sendExtras(input), timeoutMs: 30_000 });
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
  ack: {
    usage: 'ack ROOM MESSAGE_ID [--json]',
    summary: 'Acknowledge a message that asks you to (docs/acknowledgements.md); prints when you did (the same when repeated).',
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'MESSAGE_ID'],
    fields: { messageId: 'MESSAGE_ID' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      const result = await client.ack(room.id, input.args[1]!);
      if (json(input)) print(result);
      else console.log(`acknowledged ${input.args[1]!} in ${room.slug} at ${result.ackedAt}`);
      return 0;
    }),
  },
  acks: {
    usage: 'acks ROOM MESSAGE_ID [--json]',
    summary: 'Who acknowledged one of your messages and who has not yet (an admin: any message).',
    options: [...CONNECTION, 'json'],
    args: ['ROOM', 'MESSAGE_ID'],
    fields: { messageId: 'MESSAGE_ID' },
    run: (input) => withClient(input, async (client) => {
      const room = await findRoom(client, input.args[0]!);
      const list = await client.acks(room.id, input.args[1]!);
      if (json(input)) {
        print(list);
        return 0;
      }
      const nameOf = senderNames(client);
      for (const { agentId, at } of list.acked) console.log(`acknowledged ${at} ${await nameOf(agentId)}`);
      for (const agentId of list.pending) console.log(`pending ${await nameOf(agentId)}`);
      console.log(`${list.acked.length} of ${list.acked.length + list.pending.length} acknowledged`);
      return 0;
    }),
  },
  dm: {
    usage: 'dm AGENT TEXT... [--data JSON] [--attach FILE_ID,...] [--json]',
    summary: 'Send a direct message to an agent (id or name), opening your direct room with it the first time (--data and --attach as for send); prints its seq and room (the message and room with --json).',
    options: [...CONNECTION, 'data', 'attach', 'json'],
    args: ['AGENT', 'TEXT...'],
    fields: { body: 'TEXT', agentId: 'AGENT', data: '--data', attachments: '--attach' },
    run: (input) => withClient(input, async (client) => {
      // As send: gives up after a while rather than waiting forever for an unreachable service.
      const { message, room } = await client.dm(input.args[0]!, input.args.slice(1).join(' '), { ...sendExtras(input), timeoutMs: 30_000 });
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
    usage: 'inbox [--attention | --awaiting] [--wait <seconds>] [--limit <n>] [--json]',
    summary: "The agent's unread messages across its rooms, oldest first (those for its attention marked \"@\"); --attention: only those (and those awaiting its acknowledgement); --awaiting: only the messages awaiting its acknowledgement (`ams ack`); --wait holds the request (up to 30 s) until one arrives.",
    options: [...CONNECTION, 'attention', 'awaiting', 'wait', 'limit', 'json'],
    fields: { wait: '--wait', limit: '--limit' },
    run(input) {
      const wait = wholeNumber(optionalString(input, 'wait'), '--wait', 30);
      const limit = wholeNumber(optionalString(input, 'limit'), '--limit', 100);
      return withClient(input, async (client) => {
        const filter = input.values.awaiting === true ? 'ack' : input.values.attention === true ? 'attention' : undefined;
        const page = await client.inbox({ ...(wait === undefined ? {} : { wait }), ...(limit === undefined ? {} : { limit }), ...(filter === undefined ? {} : { filter }) });
        if (json(input)) {
          print(page);
          return 0;
        }
        const nameOf = senderNames(client);
        const slugs = new Map((await client.rooms()).map((r) => [r.id, r.slug]));
        for (const m of page.messages) console.log(`${m.attention ? '@ ' : ''}${await messageLine(m, nameOf, slugs.get(m.roomId) ?? m.roomId)}`);
        if (page.messages.length === 0) console.log(filter === undefined ? 'nothing unread' : filter === 'ack' ? 'nothing awaits your acknowledgement' : 'nothing for your attention');
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
