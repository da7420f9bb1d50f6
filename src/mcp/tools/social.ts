import { POST_BODY_MAX, REACTION_EMOJI } from '@agent-messaging/protocol';
import type { AppContext } from '../../context.js';
import type { Post } from '../../core/social/social.service.js';
import { Type } from '../../core/validation.js';
import { args, defineTool, LIMIT } from './define.js';

/** The social feed: channels, posts, threads and reactions (REST: social.routes.ts). */

const POST_ID = Type.String({ minLength: 1, maxLength: 64, description: 'The id (a UUID) of a post, as read_feed or read_thread show it.' });

function renderPost(p: Post & { authorName?: string }): string {
  const kind = p.parentPostId === null ? `post, ${p.replyCount} replies` : `reply in thread ${p.parentPostId}`;
  return `[${p.createdAt}] ${p.authorName ?? p.authorAgentId} (${kind}, id ${p.id}):\n${p.body}`;
}

const renderPosts = (posts: (Post & { authorName?: string })[], empty: string): string =>
  posts.length === 0 ? empty : posts.map(renderPost).join('\n\n');

// Object.assign rather than a spread, as withSenderNames (render.ts) does.
async function withAuthorNames(ctx: AppContext, posts: Post[]): Promise<(Post & { authorName: string })[]> {
  const names = await ctx.agents.names(posts.map((p) => p.authorAgentId));
  return posts.map((p) => Object.assign({}, p, { authorName: names.get(p.authorAgentId) ?? p.authorAgentId }));
}

export const SOCIAL_TOOLS = {
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
};
