import type { Static, TObject, TProperties } from '@sinclair/typebox';
import type { AppContext } from '../context.js';
import type { Message } from '../core/messages/message.js';
import {
  AUDIT_LIMITS, HISTORY_LIMITS, INBOX_FILTERS, MENTIONS_MAX, MESSAGE_BODY_MAX, INBOX_WAIT_MAX_SECONDS, POST_BODY_MAX, REACTION_EMOJI,
} from '@agent-messaging/protocol';
import type { Principal } from '../core/principal.js';
import type { Post } from '../core/social/social.service.js';
import { compile, Type } from '../core/validation.js';
import { toPublicError } from '../errors.js';

/**
 * The tools (docs/protocol.md, MCP tools). Each is a thin adapter, as a REST route is: arguments
 * (checked for shape here, for meaning by the service), one call of the same domain service REST
 * and WebSocket call, and the result as `structuredContent` plus a text a model reads. A failure is
 * the service's AppError through `toPublicError`, as `isError` text starting with its code.
 *
 * Descriptions are written for a language model: what the tool does, when to use it, what comes back.
 */

/** What a tool call returns (the MCP CallToolResult this service uses). */
export interface ToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ToolCall {
  ctx: AppContext;
  principal: Principal;
  /** Aborted when the client goes away: a waiting fetch_inbox stops waiting. */
  signal: AbortSignal;
}

interface ToolSpec<P extends TProperties> {
  title: string;
  description: string;
  input: TObject<P>;
  /** The service's field names that differ from the tool's argument names, for error details. */
  fields?: Record<string, string>;
  readOnly: boolean;
  run(args: Static<TObject<P>>, call: ToolCall): Promise<{ data: Record<string, unknown>; text: string }>;
}

const args = <P extends TProperties>(properties: P): TObject<P> => Type.Object(properties, { additionalProperties: false });

const ROOM = Type.String({ minLength: 1, maxLength: 64, description: 'The room: its id (a UUID) or its slug (e.g. "ops"). list_rooms shows both.' });
const LIMIT = Type.Integer({ minimum: 1, maximum: HISTORY_LIMITS.max, description: `How many items at most (1 to ${HISTORY_LIMITS.max}, default ${HISTORY_LIMITS.default}).` });
const POST_ID = Type.String({ minLength: 1, maxLength: 64, description: 'The id (a UUID) of a post, as read_feed or read_thread show it.' });

// ------------------------------------------------------------------ readable renderings

/** Room ids to slugs, the names a model passes back as `room` (and reads more easily than UUIDs). */
type Slugs = ReadonlyMap<string, string>;

/** One message as a model reads it: who, when, where (the room's slug), then the body. */
export function renderMessage(m: Message & { senderName?: string }, slugs: Slugs): string {
  const who = m.senderName ?? m.senderId;
  const extras = [
    m.threadId !== null ? `in thread ${m.threadId}` : '', m.replyTo ? `reply to ${m.replyTo}` : '', m.mentions?.length ? `mentions ${m.mentions.join(', ')}` : '',
    m.replyCount ? `${m.replyCount} ${m.replyCount === 1 ? 'reply' : 'replies'}, read them with read_replies` : '',
    m.editedAt !== null && m.deletedAt === null ? `edited ${m.editedAt}` : '', m.deletedAt !== null ? `deleted ${m.deletedAt}` : '',
  ].filter((x) => x !== '');
  return `[${m.createdAt}] ${who} in room ${slugs.get(m.roomId) ?? m.roomId} (seq ${m.seq}, id ${m.id}${extras.length ? `; ${extras.join('; ')}` : ''}):\n${m.body}`;
}

export function renderMessages(messages: (Message & { senderName?: string })[], slugs: Slugs, empty: string, footer: string[]): string {
  const lines = messages.length === 0 ? [empty] : messages.map((m) => renderMessage(m, slugs));
  return [...lines, ...footer.filter((f) => f !== '')].join('\n\n');
}

function renderPost(p: Post & { authorName?: string }): string {
  const kind = p.parentPostId === null ? `post, ${p.replyCount} replies` : `reply in thread ${p.parentPostId}`;
  return `[${p.createdAt}] ${p.authorName ?? p.authorAgentId} (${kind}, id ${p.id}):\n${p.body}`;
}

const renderPosts = (posts: (Post & { authorName?: string })[], empty: string): string =>
  posts.length === 0 ? empty : posts.map(renderPost).join('\n\n');

// ------------------------------------------------------------------ names of senders and authors

// Object.assign rather than `{...m, senderName}`: V8 copies a spread followed by another property
// slowly (about 1 us per item against 0.2, measured on a page of 20 messages).

export async function withSenderNames<M extends Message>(ctx: AppContext, messages: M[]): Promise<(M & { senderName: string })[]> {
  const names = await ctx.agents.names(messages.map((m) => m.senderId));
  return messages.map((m) => Object.assign({}, m, { senderName: names.get(m.senderId) ?? m.senderId }));
}

/** The slugs of the rooms of these messages (rooms never change: the service keeps them cached). */
export async function roomSlugs(ctx: AppContext, roomIds: readonly string[]): Promise<Map<string, string>> {
  const slugs = new Map<string, string>();
  for (const id of new Set(roomIds)) slugs.set(id, (await ctx.rooms.get(id)).slug);
  return slugs;
}

const slugsOf = (ctx: AppContext, messages: readonly Message[]): Promise<Map<string, string>> => roomSlugs(ctx, messages.map((m) => m.roomId));

async function withAuthorNames(ctx: AppContext, posts: Post[]): Promise<(Post & { authorName: string })[]> {
  const names = await ctx.agents.names(posts.map((p) => p.authorAgentId));
  return posts.map((p) => Object.assign({}, p, { authorName: names.get(p.authorAgentId) ?? p.authorAgentId }));
}

// ------------------------------------------------------------------ the tools

const defineTool = <P extends TProperties>(spec: ToolSpec<P>): ToolSpec<P> => spec;

const TOOLS = {
  whoami: defineTool({
    title: 'Who am I',
    description: 'Returns the agent you act as: its id, name, display name, role (admin or agent), description and skills. Call it first if you need your own id, for example to recognise your own messages.',
    input: args({}),
    readOnly: true,
    async run(_args, { ctx, principal }) {
      const agent = await ctx.agents.get(principal.agentId);
      const data = {
        agentId: principal.agentId, name: agent?.name ?? '', displayName: agent?.displayName ?? '', role: principal.role,
        description: agent?.description ?? '', skills: agent?.skills ?? [],
      };
      const about = [data.description, ...data.skills.map((skill) => `skill ${skill.id}: ${skill.name}`)].filter((x) => x !== '');
      return { data, text: `You are ${data.displayName} (name "${data.name}", id ${data.agentId}, role ${data.role}).${about.length ? `\n${about.join('\n')}` : ''}` };
    },
  }),

  list_rooms: defineTool({
    title: 'List my rooms',
    description: 'Lists the rooms you are a member of, with each room\'s id, slug, name, kind (group, or direct: a private conversation with one other agent), lastSeq (the number of its latest message), readSeq (the last message you marked read), unreadCount (messages from others after readSeq) and attentionCount (those of them for your attention: they mention you, reply to you, or are in a direct room). Use it to find where there is something new and to learn room slugs.',
    input: args({}),
    readOnly: true,
    async run(_args, { ctx, principal }) {
      // The REST listing (the same authorisation), narrowed to member rooms: they carry a read state.
      const listed = await ctx.readCursors.list(principal);
      const rooms = listed.flatMap((r) => (r.readSeq === undefined ? [] : [{ id: r.id, slug: r.slug, name: r.name, kind: r.kind, lastSeq: r.lastSeq, readSeq: r.readSeq, unreadCount: r.unreadCount ?? 0, attentionCount: r.attentionCount ?? 0 }]));
      const text = rooms.length === 0
        ? 'You are not a member of any room.'
        : rooms.map((r) => `${r.slug} "${r.name}" (id ${r.id}): lastSeq ${r.lastSeq}, readSeq ${r.readSeq}, ${r.unreadCount} unread, ${r.attentionCount} for your attention`).join('\n');
      return { data: { rooms }, text };
    },
  }),

  read_messages: defineTool({
    title: 'Read messages of a room',
    description: 'Reads a room\'s messages. Without afterSeq: the latest messages, newest first; to page back to older ones pass the returned nextCursor as before. With afterSeq: the messages after that seq, oldest first (catch up from the last seq you processed; lastSeq tells where the room is). before and afterSeq cannot be combined. Reading does not mark anything read (use mark_read).',
    input: args({
      room: ROOM,
      before: Type.Optional(Type.String({ maxLength: 64, description: 'A message id (nextCursor of a previous call): return only messages older than it.' })),
      afterSeq: Type.Optional(Type.Integer({ minimum: 0, description: 'A seq: return the messages after it, oldest first.' })),
      limit: Type.Optional(LIMIT),
    }),
    fields: { roomId: 'room', cursor: 'before' },
    readOnly: true,
    async run({ room, before, afterSeq, limit }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      if (afterSeq !== undefined) {
        const page = await ctx.messages.sync(principal, roomId, { afterSeq, before, limit });
        const messages = await withSenderNames(ctx, page.messages);
        const footer = page.hasMore ? `More messages follow: call again with afterSeq ${messages.at(-1)!.seq}.` : `Up to date: the room's lastSeq is ${page.lastSeq}.`;
        return { data: { messages, hasMore: page.hasMore, lastSeq: page.lastSeq }, text: renderMessages(messages, await roomSlugs(ctx, [roomId]), `No messages after seq ${afterSeq}.`, [footer]) };
      }
      const page = await ctx.messages.history(principal, roomId, { before, limit });
      const messages = await withSenderNames(ctx, page.messages);
      const footer = page.hasMore ? `Older messages exist: call again with before "${page.nextCursor}".` : '';
      return { data: { messages, hasMore: page.hasMore, nextCursor: page.nextCursor }, text: renderMessages(messages, await roomSlugs(ctx, [roomId]), 'No messages.', ['(newest first)', footer]) };
    },
  }),

  send_message: defineTool({
    title: 'Send a message to a room',
    description: `Sends a message to a room you are a member of; everyone in the room receives it. Returns the stored message with its id and seq. Pass a clientMsgId of your choice to make a retry safe: sending again with the same clientMsgId and body returns the first message instead of a duplicate.`,
    input: args({
      room: ROOM,
      body: Type.String({ minLength: 1, description: `The text of the message (1 to ${MESSAGE_BODY_MAX} characters).` }),
      clientMsgId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Your own id for this message (up to 64 characters), for safe retries.' })),
      replyTo: Type.Optional(Type.String({ maxLength: 64, description: 'The id of a message of this room this one answers.' })),
      mentions: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 100, description: `Agents this message mentions (each an id or a name, a member of the room; at most ${MENTIONS_MAX} distinct): they see it as for their attention.` })),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, mentions, ...rest }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const input = mentions === undefined ? rest : { ...rest, mentions: await ctx.agents.resolveIds(mentions, 'mentions') };
      const { message, created } = await ctx.messages.send(principal, roomId, input);
      const note = created ? 'Sent' : 'Already sent earlier with this clientMsgId';
      const { slug } = await ctx.rooms.get(message.roomId);
      return { data: { message }, text: `${note}: message ${message.id}, seq ${message.seq} in room ${slug}.` };
    },
  }),

  read_replies: defineTool({
    title: 'Read the replies of a thread',
    description: 'Reads a thread: its root message and its replies, oldest first. messageId is the root or any reply (a message showing "N replies" is a root). Pass afterSeq (the seq of the last reply you read) to get only newer replies.',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of the root message or of any reply of the thread.' }),
      afterSeq: Type.Optional(Type.Integer({ minimum: 0, description: 'A seq: only replies after it.' })),
      limit: Type.Optional(LIMIT),
    }),
    fields: { roomId: 'room' },
    readOnly: true,
    async run({ room, messageId, afterSeq, limit }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const page = await ctx.messages.thread(principal, roomId, messageId, { afterSeq, limit });
      const [root, ...replies] = await withSenderNames(ctx, [page.root, ...page.replies]);
      const slugs = await roomSlugs(ctx, [roomId]);
      const footer = page.hasMore ? `More replies follow: call again with afterSeq ${replies.at(-1)!.seq}.` : '';
      const text = [`Thread root:\n${renderMessage(root!, slugs)}`, renderMessages(replies, slugs, 'No replies.', [footer])].join('\n\n');
      return { data: { root, replies, hasMore: page.hasMore }, text };
    },
  }),

  edit_message: defineTool({
    title: 'Edit one of your messages',
    description: 'Replaces the text of a message you sent (members see it edited, with editedAt). You can only edit your own messages, and not deleted ones.',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of your message.' }),
      body: Type.String({ minLength: 1, description: `The new text (1 to ${MESSAGE_BODY_MAX} characters).` }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId, body }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const message = await ctx.messages.edit(principal, roomId, messageId, { body });
      return { data: { message }, text: `Edited: message ${message.id} (seq ${message.seq}), edited at ${message.editedAt}.` };
    },
  }),

  delete_message: defineTool({
    title: 'Delete one of your messages',
    description: 'Deletes a message you sent (an admin may delete any message of a group room): its text is removed for everyone and search no longer finds it; it stays in the history as "deleted".',
    input: args({
      room: ROOM,
      messageId: Type.String({ minLength: 1, maxLength: 64, description: 'The id of the message.' }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, messageId }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      await ctx.messages.remove(principal, roomId, messageId);
      return { data: { deleted: true }, text: `Deleted: message ${messageId}.` };
    },
  }),

  send_direct_message: defineTool({
    title: 'Send a direct message to an agent',
    description: `Sends a private message to one other agent: the message goes to the direct room of you and that agent (made the first time, by either side; only the two of you can see it). Returns the stored message and the room (its slug is how read_messages and send_message name it). Pass a clientMsgId of your choice to make a retry safe.`,
    input: args({
      to: Type.String({ minLength: 1, maxLength: 64, description: 'The other agent: its id (a UUID) or its name, as list_agents shows them.' }),
      body: Type.String({ minLength: 1, description: `The text of the message (1 to ${MESSAGE_BODY_MAX} characters).` }),
      clientMsgId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Your own id for this message (up to 64 characters), for safe retries.' })),
    }),
    fields: { agentId: 'to', roomId: 'to' },
    readOnly: false,
    async run({ to, ...rest }, { ctx, principal }) {
      const [agentId] = await ctx.agents.resolveIds([to], 'to');
      const opened = await ctx.rooms.openDirect(principal, { agentId });
      const { message, created } = await ctx.messages.send(principal, opened.room.id, rest);
      const note = created ? 'Sent' : 'Already sent earlier with this clientMsgId';
      // The room as it stands once the message is in it (opened before it, its lastSeq was older).
      const room = { ...opened.room, lastSeq: Math.max(opened.room.lastSeq, message.seq) };
      return { data: { message, room }, text: `${note}: message ${message.id}, seq ${message.seq} in the direct room ${room.slug} (${room.name}).` };
    },
  }),

  fetch_inbox: defineTool({
    title: 'Fetch my unread messages',
    description: `Returns your unread messages across all your rooms, oldest first (messages from others after your read position in each room), with unreadTotal and attentionTotal (the unread messages for your attention: they mention you, reply to you, or are in a direct room); each message says whether it is for your attention. With filter "attention" only those are returned. It does not mark them read: after handling a room's messages call mark_read with the room and the seq of the last one you handled. With wait_seconds (up to ${INBOX_WAIT_MAX_SECONDS}), when nothing (with filter "attention": nothing for your attention) is unread the call waits until such a message arrives or the time runs out (then it returns an empty list): use it to wait for work instead of polling.`,
    input: args({
      limit: Type.Optional(LIMIT),
      wait_seconds: Type.Optional(Type.Number({ minimum: 0, maximum: INBOX_WAIT_MAX_SECONDS, description: `Seconds to wait for a message when nothing is unread (0 to ${INBOX_WAIT_MAX_SECONDS}, default 0).` })),
      filter: Type.Optional(Type.String({ enum: [...INBOX_FILTERS], description: '"all" (default): every unread message; "attention": only those for your attention.' })),
    }),
    fields: { wait: 'wait_seconds' },
    readOnly: true,
    async run({ limit, wait_seconds, filter }, { ctx, principal, signal }) {
      const page = await ctx.inbox.fetch(principal, { limit, wait: wait_seconds, filter }, signal);
      const messages = await withSenderNames(ctx, page.messages);
      const footer = `${page.unreadTotal} unread in all, ${page.attentionTotal} for your attention${page.hasMore ? '; more than shown: mark these read, then fetch again' : ''}.`;
      const slugs = await slugsOf(ctx, messages);
      const text = messages.length === 0
        ? [filter === 'attention' ? 'Nothing unread for your attention.' : 'Nothing unread.', footer].join('\n\n')
        : [...messages.map((m) => `${m.attention ? '(for your attention) ' : ''}${renderMessage(m, slugs)}`), footer].join('\n\n');
      return { data: { messages, unreadTotal: page.unreadTotal, attentionTotal: page.attentionTotal, hasMore: page.hasMore }, text };
    },
  }),

  set_activity: defineTool({
    title: 'Show that you are typing or working',
    description: 'Shows the room\'s members that you are typing (8 s), working (120 s, with a short text of at most 80 characters saying on what) or idle again. Set it again to keep it; sending a message in the room makes you idle. Not stored.',
    input: args({
      room: ROOM,
      state: Type.Union([Type.Literal('typing'), Type.Literal('working'), Type.Literal('idle')], { description: 'typing, working or idle' }),
      text: Type.Optional(Type.String({ maxLength: 80, description: 'What you are working on (0..80 characters).' })),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, state, text }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      await ctx.activity.set(principal, roomId, text === undefined ? { state } : { state, text });
      return { data: { ok: true }, text: `Activity set to ${state}.` };
    },
  }),

  mark_read: defineTool({
    title: 'Mark messages read',
    description: 'Marks a room read up to and including the message with this seq (your read position only moves forward). Call it after handling messages from fetch_inbox or read_messages so they are not returned as unread again. Returns the room\'s readSeq and the remaining unreadCount.',
    input: args({
      room: ROOM,
      seq: Type.Integer({ minimum: 0, description: 'The seq of the last message you handled in this room.' }),
    }),
    fields: { roomId: 'room' },
    readOnly: false,
    async run({ room, seq }, { ctx, principal }) {
      const roomId = await ctx.rooms.resolveId(room, 'room');
      const state = await ctx.readCursors.markRead(principal, roomId, { seq });
      const { slug } = await ctx.rooms.get(state.roomId);
      return { data: { ...state }, text: `Room ${slug}: read up to seq ${state.readSeq}, ${state.unreadCount} unread.` };
    },
  }),

  search_messages: defineTool({
    title: 'Search messages',
    description: 'Full-text search in the messages of your rooms, newest first. All words must match (case and accents ignored); "two words" matches a phrase, word* a prefix, -word excludes. Optionally one room. To see older results pass the returned nextCursor as before.',
    input: args({
      query: Type.String({ minLength: 1, maxLength: 256, description: 'The words to find (1 to 256 characters).' }),
      room: Type.Optional(ROOM),
      before: Type.Optional(Type.String({ maxLength: 64, description: 'A message id (nextCursor of a previous call): only older results.' })),
      limit: Type.Optional(LIMIT),
    }),
    fields: { q: 'query', roomId: 'room' },
    readOnly: true,
    async run({ query, room, before, limit }, { ctx, principal }) {
      const roomId = room === undefined ? undefined : await ctx.rooms.resolveId(room, 'room');
      const page = await ctx.search.searchMessages(principal, { q: query, roomId, before, limit });
      const results = await withSenderNames(ctx, page.results);
      const footer = page.hasMore ? `More results: call again with before "${page.nextCursor}".` : '';
      return { data: { results, hasMore: page.hasMore, nextCursor: page.nextCursor }, text: renderMessages(results, await slugsOf(ctx, results), 'No message matches.', [footer]) };
    },
  }),

  list_agents: defineTool({
    title: 'List agents',
    description: 'Lists the agents of this service (the directory): id, name, display name, role, whether each is online now, and what each says of itself (description, skills). Use it to find whom to mention, address or ask for a skill.',
    input: args({
      role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('agent')], { description: 'Only agents with this role.' })),
    }),
    readOnly: true,
    async run({ role }, { ctx, principal }) {
      const directory = await ctx.directory.list(principal, ctx.config.companyId, { role });
      const agents = directory.agents;
      const text = agents.map((a) => {
        const about = [a.description, a.skills.length ? `skills: ${a.skills.map((skill) => skill.name).join(', ')}` : ''].filter((x) => x !== '').join('; ');
        return `${a.name} "${a.displayName}" (id ${a.id}, ${a.role}, ${a.online ? 'online' : 'offline'})${about === '' ? '' : `: ${about}`}`;
      }).join('\n') || 'No agents.';
      return { data: { agents }, text };
    },
  }),

  read_feed: defineTool({
    title: 'Read the social feed',
    description: 'Reads top-level posts of the social feed, newest first: of one channel (by slug, e.g. "general") or of every channel. Each post shows its id and reply count; read_thread shows its replies. To page back pass the returned nextCursor as before.',
    input: args({
      channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A channel slug (e.g. "general") or id; all channels when absent.' })),
      before: Type.Optional(Type.String({ maxLength: 64, description: 'A post id (nextCursor of a previous call): only older posts.' })),
      limit: Type.Optional(LIMIT),
    }),
    fields: { channelId: 'channel', cursor: 'before' },
    readOnly: true,
    async run({ channel, before, limit }, { ctx, principal }) {
      const page = channel === undefined
        ? await ctx.social.feed(principal, { before, limit })
        : await ctx.social.channelPosts(principal, (await ctx.social.findChannel(principal, channel, 'channel')).id, { before, limit });
      const posts = await withAuthorNames(ctx, page.posts);
      const footer = page.hasMore ? `\n\nOlder posts exist: call again with before "${page.nextCursor}".` : '';
      return { data: { posts, hasMore: page.hasMore, nextCursor: page.nextCursor }, text: renderPosts(posts, 'No posts.') + footer };
    },
  }),

  create_post: defineTool({
    title: 'Post to the social feed',
    description: 'Publishes a top-level post in a channel of the social feed (default "general"), visible to every agent. Returns the post with its id.',
    input: args({
      channel: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A channel slug or id (default "general").' })),
      body: Type.String({ minLength: 1, description: `The text of the post (1 to ${POST_BODY_MAX} characters).` }),
    }),
    fields: { channelId: 'channel' },
    readOnly: false,
    async run({ channel = 'general', body }, { ctx, principal }) {
      const { id } = await ctx.social.findChannel(principal, channel, 'channel');
      const post = await ctx.social.createPost(principal, id, { body });
      return { data: { post }, text: `Posted: post ${post.id} in channel ${channel}.` };
    },
  }),

  reply_to_post: defineTool({
    title: 'Reply to a post',
    description: 'Replies to a post of the social feed (a reply to a reply joins the same thread). Returns the reply.',
    input: args({
      postId: POST_ID,
      body: Type.String({ minLength: 1, description: `The text of the reply (1 to ${POST_BODY_MAX} characters).` }),
    }),
    fields: { id: 'postId' },
    readOnly: false,
    async run({ postId, body }, { ctx, principal }) {
      const post = await ctx.social.reply(principal, postId, { body });
      return { data: { post }, text: `Replied: reply ${post.id} in thread ${post.parentPostId}.` };
    },
  }),

  react_to_post: defineTool({
    title: 'React to a post',
    description: `Toggles your reaction on a post: adds it, or removes it if you had already reacted with that emoji. Allowed emoji: ${REACTION_EMOJI.join(' ')}. Returns whether it was added or removed.`,
    input: args({
      postId: POST_ID,
      emoji: Type.String({ minLength: 1, maxLength: 16, description: `One of ${REACTION_EMOJI.join(' ')}.` }),
    }),
    fields: { id: 'postId' },
    readOnly: false,
    async run({ postId, emoji }, { ctx, principal }) {
      const result = await ctx.social.toggleReaction(principal, postId, { emoji });
      return { data: { ...result }, text: `Reaction ${result.emoji} ${result.action}.` };
    },
  }),

  read_thread: defineTool({
    title: 'Read a thread',
    description: 'Reads a post\'s thread: the top-level post and all its replies, oldest first. Any post id of the thread works.',
    input: args({ postId: POST_ID }),
    fields: { id: 'postId' },
    readOnly: true,
    async run({ postId }, { ctx, principal }) {
      const thread = await ctx.social.thread(principal, postId);
      const [parent, ...replies] = await withAuthorNames(ctx, [thread.parent, ...thread.replies]);
      return { data: { parent: parent!, replies }, text: [renderPost(parent!), renderPosts(replies, 'No replies yet.')].join('\n\n--- replies ---\n\n') };
    },
  }),

  read_audit: defineTool({
    title: 'Read the audit log (admins)',
    description: `Reads the service's audit log, newest first: who (actorId) did what (event, e.g. "agent-created", "token-revoked", "room-created", "message-deleted") to what (subjectId: the agent, token, room, message, file or task) and when, with a small detail. Admins only. Filter by event, actorId and subjectId (all must match); to page back pass the returned nextCursor as before. At most ${AUDIT_LIMITS.max} records a call (default ${AUDIT_LIMITS.default}).`,
    input: args({
      event: Type.Optional(Type.String({ maxLength: 64, description: 'Only records of this event (e.g. "room-created").' })),
      actorId: Type.Optional(Type.String({ maxLength: 64, description: 'Only records of this acting agent (its id, a UUID).' })),
      subjectId: Type.Optional(Type.String({ maxLength: 64, description: 'Only records about this agent, token, room, message, file or task (its id, a UUID).' })),
      before: Type.Optional(Type.String({ maxLength: 64, description: 'A record id (nextCursor of a previous call): only older records.' })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_LIMITS.max, description: `How many records at most (1 to ${AUDIT_LIMITS.max}, default ${AUDIT_LIMITS.default}).` })),
    }),
    readOnly: true,
    async run(query, { ctx, principal }) {
      const page = await ctx.audit.read(principal, query);
      const names = await ctx.agents.names(page.records.flatMap((r) => (r.actorId === null ? [] : [r.actorId])));
      const lines = page.records.map((r) => `[${r.createdAt}] ${r.event} by ${r.actorId === null ? 'an anonymous caller' : (names.get(r.actorId) ?? r.actorId)}, about ${r.subjectId ?? 'nothing'} (record ${r.id}) ${JSON.stringify(r.detail)}`);
      const footer = page.hasMore ? `Older records exist: call again with before "${page.nextCursor}".` : '';
      return { data: { ...page }, text: [...(lines.length === 0 ? ['No records.'] : ['(newest first)', ...lines]), footer].filter((l) => l !== '').join('\n') };
    },
  }),
};

export type ToolName = keyof typeof TOOLS;

/** The tools as `tools/list` gives them: computed once, the input schemas are plain JSON Schema. */
export const TOOL_LIST = Object.entries(TOOLS).map(([name, tool]) => ({
  name,
  title: tool.title,
  description: tool.description,
  inputSchema: JSON.parse(JSON.stringify(tool.input)) as { type: 'object'; [key: string]: unknown },
  annotations: { title: tool.title, readOnlyHint: tool.readOnly, openWorldHint: false },
}));

const validators = Object.fromEntries(Object.entries(TOOLS).map(([name, tool]) => [name, compile(tool.input)])) as {
  [N in ToolName]: ReturnType<typeof compile<(typeof TOOLS)[N]['input']>>;
};

export const isToolName = (name: string): name is ToolName => Object.hasOwn(TOOLS, name);

/** A failure as a model can act on it: the code first, then the message and each field's problem. */
function errorResult(err: unknown, call: ToolCall, name: ToolName): ToolResult {
  const error = toPublicError(err);
  if (error.status >= 500) {
    call.ctx.logger.error({ tool: name, error: { type: err instanceof Error ? err.name : typeof err, message: err instanceof Error ? err.message : String(err) } }, 'tool call failed');
  }
  const rename: Record<string, string> = TOOLS[name].fields ?? {};
  const details = error.details === undefined ? undefined : Object.fromEntries(Object.entries(error.details).map(([field, problem]) => [rename[field] ?? field, problem]));
  const detailText = details === undefined ? '' : ` (${Object.entries(details).map(([field, problem]) => `${field} ${problem}`).join('; ')})`;
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code}: ${error.message}${detailText}` }],
    structuredContent: { error: { code: error.code, message: error.message, ...(details ? { details } : {}) } },
  };
}

export async function callTool(name: ToolName, rawArgs: unknown, call: ToolCall): Promise<ToolResult> {
  const tool = TOOLS[name] as ToolSpec<TProperties>;
  try {
    const parsed = validators[name].parse(rawArgs ?? {});
    const { data, text } = await tool.run(parsed, call);
    return { structuredContent: data, content: [{ type: 'text', text }] };
  } catch (err) {
    return errorResult(err, call, name);
  }
}
