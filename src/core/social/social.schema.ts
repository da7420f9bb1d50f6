import { ROOM_SLUG_PATTERN } from '../rooms/rooms.schema.js';
import { Type, Text } from '../validation.js';

/** Channel slugs follow the room slug rule (DESIGN.md section 3). */
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
