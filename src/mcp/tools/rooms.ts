import { args, defineTool, ROOM } from './define.js';
import { Type } from '../../core/validation.js';

/** Rooms: the caller's rooms, its read position and its activity in one (REST: rooms.routes.ts). */

export const ROOM_TOOLS = {
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
};
