import type { Selectable, Transaction } from 'kysely';
import { dialectOf } from '../../store/dialect.js';
import type { DB, Db, SocialChannelsTable, SocialPostsTable } from '../../store/schema.js';
import { toIso } from '../../store/values.js';

export interface Channel {
  id: string;
  slug: string;
  name: string;
  createdAt: string;
}

export interface Post {
  id: string;
  channelId: string;
  authorAgentId: string;
  body: string;
  /** Null for a top-level post; a reply always names the top-level post of its thread. */
  parentPostId: string | null;
  /** Maintained on write (replies of a top-level post); always 0 for a reply. */
  replyCount: number;
  createdAt: string;
}

export interface ReactionCount {
  emoji: string;
  count: number;
  /** Whether the asking agent's reaction is among them. */
  mine: boolean;
}

const toChannel = (row: Selectable<SocialChannelsTable>): Channel => ({
  id: row.id,
  slug: row.slug,
  name: row.name,
  createdAt: toIso(row.created_at),
});

const toPost = (row: Selectable<SocialPostsTable>): Post => ({
  id: row.id,
  channelId: row.channel_id,
  authorAgentId: row.author_agent_id,
  body: row.body,
  parentPostId: row.parent_post_id,
  replyCount: Number(row.reply_count),
  createdAt: toIso(row.created_at),
});

export async function insertChannel(db: Db, channel: Channel): Promise<void> {
  await db
    .insertInto('social_channels')
    .values({ id: channel.id, slug: channel.slug, name: channel.name, created_at: channel.createdAt })
    .execute();
}

/** Oldest first: the seeded `general` channel leads. */
export async function listChannels(db: Db): Promise<Channel[]> {
  return (await db.selectFrom('social_channels').selectAll().orderBy('id').execute()).map(toChannel);
}

export async function findChannelBySlug(db: Db, slug: string): Promise<Channel | null> {
  const row = await db.selectFrom('social_channels').selectAll().where('slug', '=', slug).executeTakeFirst();
  return row ? toChannel(row) : null;
}

export async function findChannelById(db: Db, id: string): Promise<Channel | null> {
  const row = await db.selectFrom('social_channels').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toChannel(row) : null;
}

export async function insertPost(db: Db, post: Post): Promise<void> {
  await db
    .insertInto('social_posts')
    .values({
      id: post.id,
      channel_id: post.channelId,
      author_agent_id: post.authorAgentId,
      body: post.body,
      parent_post_id: post.parentPostId,
      reply_count: post.replyCount,
      created_at: post.createdAt,
    })
    .execute();
}

export async function findPostById(db: Db, id: string): Promise<Post | null> {
  const row = await db.selectFrom('social_posts').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toPost(row) : null;
}

/** Atomic in both engines: concurrent replies each add one. */
export async function incrementReplyCount(db: Db, postId: string): Promise<void> {
  await db
    .updateTable('social_posts')
    .set((eb) => ({ reply_count: eb('reply_count', '+', 1) }))
    .where('id', '=', postId)
    .execute();
}

/** Whether `id` is a top-level post (of `channelId` when given): a valid `before` for a page. */
export async function isTopLevelPost(db: Db, id: string, channelId: string | null): Promise<boolean> {
  let query = db.selectFrom('social_posts').select('id').where('id', '=', id).where('parent_post_id', 'is', null);
  if (channelId !== null) query = query.where('channel_id', '=', channelId);
  return (await query.executeTakeFirst()) !== undefined;
}

/**
 * Top-level posts newest first (all channels when channelId is null), keyset on the time-ordered
 * id with `before` exclusive. Fetches one extra row to tell whether older posts exist.
 */
export async function pageTopLevelPosts(
  db: Db,
  options: { channelId: string | null; before: string | null; limit: number },
): Promise<{ posts: Post[]; hasMore: boolean }> {
  let query = db.selectFrom('social_posts').selectAll().where('parent_post_id', 'is', null);
  if (options.channelId !== null) query = query.where('channel_id', '=', options.channelId);
  if (options.before !== null) query = query.where('id', '<', options.before);
  const rows = await query.orderBy('id', 'desc').limit(options.limit + 1).execute();
  return { posts: rows.slice(0, options.limit).map(toPost), hasMore: rows.length > options.limit };
}

/** All replies of a top-level post, oldest first. */
export async function listReplies(db: Db, parentPostId: string): Promise<Post[]> {
  const rows = await db.selectFrom('social_posts').selectAll().where('parent_post_id', '=', parentPostId).orderBy('id').execute();
  return rows.map(toPost);
}

/**
 * Serialises toggles of one (post, agent, emoji) until the transaction ends, so each sees the
 * previous one's result (a lock on the key, see store/dialect.ts).
 */
export async function lockReactionKey(trx: Transaction<DB>, postId: string, agentId: string, emoji: string): Promise<void> {
  await dialectOf(trx).lockKey(trx, `social-reaction:${postId}:${agentId}:${emoji}`);
}

export async function deleteReaction(db: Db, postId: string, agentId: string, emoji: string): Promise<boolean> {
  const result = await db
    .deleteFrom('social_reactions')
    .where('post_id', '=', postId)
    .where('agent_id', '=', agentId)
    .where('emoji', '=', emoji)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Inserts unless the row exists (the primary key decides, also against a concurrent insert). */
export async function insertReactionIfAbsent(db: Db, postId: string, agentId: string, emoji: string, createdAt: string): Promise<boolean> {
  const result = await db
    .insertInto('social_reactions')
    .values({ post_id: postId, agent_id: agentId, emoji, created_at: createdAt })
    .onConflict((oc) => oc.columns(['post_id', 'agent_id', 'emoji']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/**
 * Counts per emoji present on a post (emoji without reactions do not appear), and whether `agentId`
 * reacted with each: one statement, so the two always agree.
 */
export async function countReactions(db: Db, postId: string, agentId: string): Promise<ReactionCount[]> {
  const rows = await db
    .selectFrom('social_reactions')
    .select((eb) => [
      'emoji',
      eb.fn.countAll<number | string>().as('count'),
      eb.fn.max<number | string>(eb.case().when('agent_id', '=', agentId).then(1).else(0).end()).as('mine'),
    ])
    .where('post_id', '=', postId)
    .groupBy('emoji')
    .execute();
  return rows.map((r) => ({ emoji: r.emoji, count: Number(r.count), mine: Number(r.mine) === 1 }));
}
