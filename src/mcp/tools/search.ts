import { args, defineTool, LIMIT, ROOM } from './define.js';
import { renderMessages, slugsOf, withSenderNames } from './render.js';
import { Type } from '../../core/validation.js';

/** Full-text search in messages (REST: search.routes.ts). */

export const SEARCH_TOOLS = {
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
};
