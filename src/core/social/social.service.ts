import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { AppError, conflict, notFound, unauthenticated, validationError } from '../../errors.js';
import { isForeignKeyViolation, isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { recordAudit } from '../audit/audit.store.js';
import type { Authz } from '../authz/authz.js';
import type { Principal } from '../principal.js';
import { parsePageCursor, parsePageLimit } from '../paging.js';
import { compile, isUuid, parseId, requireObject } from '../validation.js';
import {
  CHANNEL_SLUG_PATTERN, CreateChannelInput, CreatePostInput, PAGE_LIMITS, REACTION_EMOJI, ToggleReactionInput,
  normaliseEmoji, type ReactionEmoji,
} from '@agent-messaging/protocol';
import {
  countReactions, deleteReaction, findChannelById, findChannelBySlug, findPostById, incrementReplyCount, insertChannel, insertPost,
  insertReactionIfAbsent, isTopLevelPost, listChannels, lockReactionKey, listReplies, pageTopLevelPosts,
  type Channel, type Post,
} from './social.store.js';

export type { Channel, Post } from './social.store.js';

export interface PageQuery {
  /** Exclusive: posts older than this id. `cursor` is accepted as the same thing, as in history. */
  before?: unknown;
  cursor?: unknown;
  limit?: unknown;
}

export interface PostPage {
  posts: Post[];
  /** Id of the oldest post on the page; null when the page is empty. */
  nextCursor: string | null;
  hasMore: boolean;
}

export interface Thread {
  parent: Post;
  replies: Post[];
}

export interface ToggleResult {
  action: 'added' | 'removed';
  emoji: ReactionEmoji;
}

export interface ReactionSummary {
  emoji: string;
  count: number;
  reactedByMe: boolean;
}

export interface SocialService {
  listChannels(principal: Principal | null): Promise<Channel[]>;
  /** A channel named by its id or its slug (MCP tools); NOT_FOUND when there is none. */
  findChannel(principal: Principal | null, ref: unknown, field: string): Promise<Channel>;
  /** Admin only. */
  createChannel(principal: Principal | null, input: unknown): Promise<Channel>;
  createPost(principal: Principal | null, channelId: unknown, input: unknown): Promise<Post>;
  /** A reply to a reply joins the thread of the top-level post. */
  reply(principal: Principal | null, postId: unknown, input: unknown): Promise<Post>;
  /** The thread a post belongs to: its top-level post and all replies, oldest first. */
  thread(principal: Principal | null, postId: unknown): Promise<Thread>;
  /** Top-level posts of all channels, newest first. */
  feed(principal: Principal | null, query: PageQuery): Promise<PostPage>;
  /** Top-level posts of one channel, newest first. */
  channelPosts(principal: Principal | null, channelId: unknown, query: PageQuery): Promise<PostPage>;
  toggleReaction(principal: Principal | null, postId: unknown, input: unknown): Promise<ToggleResult>;
  listReactions(principal: Principal | null, postId: unknown): Promise<ReactionSummary[]>;
}

const createChannelInput = compile(CreateChannelInput);
const createPostInput = compile(CreatePostInput);
const toggleReactionInput = compile(ToggleReactionInput);
const CHANNEL_SLUG_RE = new RegExp(CHANNEL_SLUG_PATTERN);

// Under the key lock a toggle decides in one attempt. Without it (a writer that does not take the
// lock) an attempt fails only when another transaction committed an insert of the same row between
// its delete and its insert; it then tries again against the committed state.
const TOGGLE_ATTEMPTS = 5;

/**
 * The writes of an agent (posts, replies, reactions). Authentication already refused a session whose
 * agent does not exist, and channels and posts are checked (and never deleted) before: a foreign key
 * that still fails names no agent, a 401 like the authentication's, never a 500.
 */
async function asAgent<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isForeignKeyViolation(err)) throw unauthenticated('Invalid or expired token');
    throw err;
  }
}

export function createSocialService(deps: { db: Kysely<DB>; authz: Authz }): SocialService {
  const { db, authz } = deps;

  const channelOr404 = async (channelId: string): Promise<Channel> => {
    const channel = await findChannelById(db, channelId);
    if (!channel) throw notFound('Channel');
    return channel;
  };

  const postOr404 = async (postId: string): Promise<Post> => {
    const post = await findPostById(db, postId);
    if (!post) throw notFound('Post');
    return post;
  };

  const page = async (channelId: string | null, query: PageQuery): Promise<PostPage> => {
    const limit = parsePageLimit(query.limit, PAGE_LIMITS);
    const { before, field } = parsePageCursor(query);
    if (before !== null && !(await isTopLevelPost(db, before, channelId))) {
      throw validationError({ [field]: channelId === null ? 'is not the id of a post in the feed' : 'is not the id of a post in this channel' });
    }
    const { posts, hasMore } = await pageTopLevelPosts(db, { channelId, before, limit });
    return { posts, nextCursor: posts.length > 0 ? posts[posts.length - 1]!.id : null, hasMore };
  };

  return {
    async listChannels(principal) {
      authz.requireAgent(principal, 'feed:read');
      return listChannels(db);
    },

    async findChannel(principal, ref, field) {
      authz.requireAgent(principal);
      if (isUuid(ref)) return channelOr404(ref.toLowerCase());
      if (typeof ref !== 'string' || !CHANNEL_SLUG_RE.test(ref)) throw validationError({ [field]: 'must be a channel id (UUID) or slug' });
      const channel = await findChannelBySlug(db, ref);
      if (!channel) throw notFound('Channel');
      return channel;
    },

    async createChannel(principal, input) {
      const admin = authz.requireAdmin(principal);
      const { slug, name } = createChannelInput.parse(requireObject(input));
      const channel: Channel = { id: uuidv7(), slug, name, createdAt: nowIso() };
      try {
        await db.transaction().execute(async (trx) => {
          await insertChannel(trx, channel);
          await recordAudit(trx, { event: 'channel-created', actorId: admin.agentId, subjectId: channel.id, detail: { slug } });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`Channel slug "${slug}" already exists`);
        throw err;
      }
      return channel;
    },

    async createPost(principal, rawChannelId, input) {
      const author = authz.requireAgent(principal, 'feed:write');
      const channelId = parseId(rawChannelId, 'channelId');
      const { body } = createPostInput.parse(requireObject(input));
      await channelOr404(channelId);
      const post: Post = { id: uuidv7(), channelId, authorAgentId: author.agentId, body, parentPostId: null, replyCount: 0, createdAt: nowIso() };
      await asAgent(() => db.transaction().execute(async (trx) => {
        await insertPost(trx, post);
        await recordAudit(trx, { event: 'post-created', actorId: author.agentId, subjectId: post.id, detail: { channelId } });
      }));
      return post;
    },

    async reply(principal, rawPostId, input) {
      const author = authz.requireAgent(principal, 'feed:write');
      const postId = parseId(rawPostId, 'id');
      const { body } = createPostInput.parse(requireObject(input));
      const target = await postOr404(postId);
      const threadId = target.parentPostId ?? target.id;
      const reply: Post = {
        id: uuidv7(), channelId: target.channelId, authorAgentId: author.agentId, body, parentPostId: threadId, replyCount: 0, createdAt: nowIso(),
      };
      // The counter moves with the row it counts, so a listing never has to count.
      await asAgent(() => db.transaction().execute(async (trx) => {
        await insertPost(trx, reply);
        await incrementReplyCount(trx, threadId);
        await recordAudit(trx, { event: 'reply-created', actorId: author.agentId, subjectId: reply.id, detail: { parentPostId: threadId, repliedTo: postId } });
      }));
      return reply;
    },

    async thread(principal, rawPostId) {
      authz.requireAgent(principal, 'feed:read');
      const post = await postOr404(parseId(rawPostId, 'id'));
      const parent = post.parentPostId === null ? post : await postOr404(post.parentPostId);
      return { parent, replies: await listReplies(db, parent.id) };
    },

    async feed(principal, query) {
      authz.requireAgent(principal, 'feed:read');
      return page(null, query);
    },

    async channelPosts(principal, rawChannelId, query) {
      authz.requireAgent(principal, 'feed:read');
      const channelId = parseId(rawChannelId, 'channelId');
      await channelOr404(channelId);
      return page(channelId, query);
    },

    async toggleReaction(principal, rawPostId, input) {
      const agent = authz.requireAgent(principal, 'feed:write');
      const postId = parseId(rawPostId, 'id');
      const { emoji: raw } = toggleReactionInput.parse(requireObject(input));
      const emoji = normaliseEmoji(raw);
      if (emoji === null) throw validationError({ emoji: `must be one of ${REACTION_EMOJI.join(', ')}` });
      await postOr404(postId);
      // One transaction: concurrent toggles of one key queue on its lock, and the primary key
      // (post, agent, emoji) guarantees a single row whatever happens.
      const action = await asAgent(() => db.transaction().execute(async (trx) => {
        await lockReactionKey(trx, postId, agent.agentId, emoji);
        for (let attempt = 0; attempt < TOGGLE_ATTEMPTS; attempt++) {
          let done: ToggleResult['action'] | null = null;
          if (await deleteReaction(trx, postId, agent.agentId, emoji)) done = 'removed';
          else if (await insertReactionIfAbsent(trx, postId, agent.agentId, emoji, nowIso())) done = 'added';
          if (done !== null) {
            await recordAudit(trx, { event: 'reaction-toggled', actorId: agent.agentId, subjectId: postId, detail: { emoji, action: done } });
            return done;
          }
        }
        throw new AppError('CONFLICT', 'The reaction is being changed concurrently; try again');
      }));
      return { action, emoji };
    },

    async listReactions(principal, rawPostId) {
      const agent = authz.requireAgent(principal, 'feed:read');
      const postId = parseId(rawPostId, 'id');
      await postOr404(postId);
      const counts = await countReactions(db, postId, agent.agentId);
      const order = (emoji: string): number => (REACTION_EMOJI as readonly string[]).indexOf(emoji);
      return counts
        .filter((c) => c.count > 0)
        .sort((a, b) => order(a.emoji) - order(b.emoji))
        .map((c) => ({ emoji: c.emoji, count: c.count, reactedByMe: c.mine }));
    },
  };
}
