import { IdString, Nullable, Timestamp } from './common.schema.js';
import { ROOM_SLUG_PATTERN } from './rooms.schema.js';
import { Type, Text, Uuid } from './text.js';

/** Channel slugs follow the room slug rule (docs/protocol.md, Conventions). */
export const CHANNEL_SLUG_PATTERN = ROOM_SLUG_PATTERN;
export const POST_BODY_MAX = 16_384;
export const PAGE_LIMIT_DEFAULT = 50;
export const PAGE_LIMIT_MAX = 100;
export const PAGE_LIMITS = { default: PAGE_LIMIT_DEFAULT, max: PAGE_LIMIT_MAX };

/** The allowed reactions, in the order listings report them. The database CHECK holds the same set. */
export const REACTION_EMOJI = ['👍', '🤔', '💡'] as const;
export type ReactionEmoji = (typeof REACTION_EMOJI)[number];

export const CreateChannelInput = Type.Object(
  {
    slug: Text({ pattern: CHANNEL_SLUG_PATTERN, maxLength: 64 }),
    name: Text({ minLength: 1, maxLength: 128 }),
  },
  { additionalProperties: true },
);

/** A top-level post and a reply take the same body. */
export const CreatePostInput = Type.Object(
  { body: Text({ minLength: 1, maxLength: POST_BODY_MAX }) },
  { additionalProperties: true },
);

/** The shape only; which emoji are allowed is decided by normaliseEmoji. */
export const ToggleReactionInput = Type.Object(
  { emoji: Text({ minLength: 1, maxLength: 16 }) },
  { additionalProperties: true },
);

const VARIATION_SELECTOR_16 = '\uFE0F';

/**
 * One of the three allowed emoji, or null. The emoji-presentation variation selector U+FE0F after
 * an allowed emoji is what many keyboards send, so it is dropped; anything else (skin tones, other
 * emoji, text, a second selector) is not that emoji.
 */
export function normaliseEmoji(value: string): ReactionEmoji | null {
  const base = value.endsWith(VARIATION_SELECTOR_16) ? value.slice(0, -VARIATION_SELECTOR_16.length) : value;
  return (REACTION_EMOJI as readonly string[]).includes(base) ? (base as ReactionEmoji) : null;
}

export const ChannelSchema = Type.Object(
  { id: IdString(), slug: Type.String({ pattern: CHANNEL_SLUG_PATTERN }), name: Type.String({ minLength: 1, maxLength: 128 }), createdAt: Timestamp() },
  { title: 'Channel' },
);
export const ChannelList = Type.Object({ channels: Type.Array(ChannelSchema) }, { title: 'ChannelList' });

export const PostSchema = Type.Object(
  {
    id: IdString(),
    channelId: IdString(),
    authorAgentId: IdString(),
    body: Type.String({ minLength: 1, maxLength: POST_BODY_MAX }),
    parentPostId: Nullable(IdString('The top-level post of the thread; null for a top-level post')),
    replyCount: Type.Integer({ minimum: 0, description: 'Replies of a top-level post; 0 for a reply' }),
    createdAt: Timestamp(),
  },
  { title: 'Post' },
);

export const PostPageSchema = Type.Object(
  {
    posts: Type.Array(PostSchema, { description: 'Top-level posts, newest first' }),
    nextCursor: Type.Union([IdString(), Type.Null()], { description: 'Id of the oldest post on the page; null when the page is empty' }),
    hasMore: Type.Boolean(),
  },
  { title: 'PostPage' },
);

export const ThreadSchema = Type.Object(
  { parent: PostSchema, replies: Type.Array(PostSchema, { description: 'Oldest first' }) },
  { title: 'Thread' },
);

const EmojiSchema = Type.Union(REACTION_EMOJI.map((e) => Type.Literal(e)));

export const ToggleResultSchema = Type.Object(
  { action: Type.Union([Type.Literal('added'), Type.Literal('removed')]), emoji: EmojiSchema },
  { title: 'ReactionToggle' },
);

export const ReactionListSchema = Type.Object(
  {
    reactions: Type.Array(
      Type.Object({ emoji: EmojiSchema, count: Type.Integer({ minimum: 1 }), reactedByMe: Type.Boolean() }, { title: 'ReactionCount' }),
      { description: 'Only emoji with count > 0' },
    ),
  },
  { title: 'ReactionList' },
);

/** Feed and channel pages: newest first, `before` (or `cursor`) exclusive. */
export const PageQuerySchema = Type.Object({
  before: Type.Optional(Uuid({ description: 'A post id: return posts older than it (exclusive)' })),
  cursor: Type.Optional(Uuid({ description: 'The same as before' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT })),
});

export const ChannelIdParams = Type.Object({ channelId: Uuid({ description: 'Channel id' }) });
export const PostIdParams = Type.Object({ id: Uuid({ description: 'Post id' }) });
