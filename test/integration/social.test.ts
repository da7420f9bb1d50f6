import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { newAdmin, newAgent, uniqueName, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING_ID = '00000000-0000-7000-8000-000000000000';

describe('social feed: channels, posts, threads, pages', () => {
  const t = useTestServer();
  let admin: TestAgent;
  let alice: TestAgent;
  let bob: TestAgent;
  let general: { id: string; slug: string; name: string; createdAt: string };

  const newChannel = async (): Promise<{ id: string; slug: string }> => {
    const slug = uniqueName('chan');
    const res = await t.api.post('/api/v1/social/channels', { slug, name: `Channel ${slug}` }, { jwt: admin.jwt });
    expect(res.status).toBe(201);
    return res.body;
  };
  const post = async (agent: TestAgent, channelId: string, body: string) => {
    const res = await t.api.post(`/api/v1/social/channels/${channelId}/posts`, { body }, { jwt: agent.jwt });
    expect(res.status).toBe(201);
    return res.body;
  };
  const reply = async (agent: TestAgent, postId: string, body: string) => {
    const res = await t.api.post(`/api/v1/social/posts/${postId}/replies`, { body }, { jwt: agent.jwt });
    expect(res.status).toBe(201);
    return res.body;
  };

  beforeAll(async () => {
    admin = await newAdmin(t.api);
    alice = await newAgent(t.api);
    bob = await newAgent(t.api);
    const channels = await t.api.get('/api/v1/social/channels', { jwt: alice.jwt });
    general = channels.body.channels.find((c: { slug: string }) => c.slug === 'general');
  });

  describe('channels', () => {
    it('a fresh install has exactly the general channel', async () => {
      // This server's database is fresh and this is the file's first test: nothing else yet.
      const res = await t.api.get('/api/v1/social/channels', { jwt: alice.jwt });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ channels: [{ id: expect.stringMatching(UUID), slug: 'general', name: 'General', createdAt: expect.stringMatching(ISO) }] });
      expect(general.id).toBe(res.body.channels[0].id);
    });

    it('an admin creates a channel (201), which is then listed; a duplicate slug is 409', async () => {
      const slug = uniqueName('news');
      const res = await t.api.post('/api/v1/social/channels', { slug, name: 'News ✨' }, { jwt: admin.jwt });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: expect.stringMatching(UUID), slug, name: 'News ✨', createdAt: expect.stringMatching(ISO) });
      const list = await t.api.get('/api/v1/social/channels', { jwt: bob.jwt });
      expect(list.body.channels).toContainEqual(res.body);

      const again = await t.api.post('/api/v1/social/channels', { slug, name: 'Other' }, { jwt: admin.jwt });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: expect.any(String) });
      const general409 = await t.api.post('/api/v1/social/channels', { slug: 'general', name: 'General 2' }, { jwt: admin.jwt });
      expect(general409.status).toBe(409);
    });

    it('a non-admin gets 403, no JWT 401, and nothing is created', async () => {
      const slug = uniqueName('nope');
      const byAgent = await t.api.post('/api/v1/social/channels', { slug, name: 'Nope' }, { jwt: alice.jwt });
      expect(byAgent.status).toBe(403);
      expect(byAgent.body).toEqual({ error: expect.any(String) });
      const anonymous = await t.api.post('/api/v1/social/channels', { slug, name: 'Nope' });
      expect(anonymous.status).toBe(401);
      const list = await t.api.get('/api/v1/social/channels', { jwt: admin.jwt });
      expect(list.body.channels.map((c: { slug: string }) => c.slug)).not.toContain(slug);
    });

    it('validates slug and name with details keyed by field', async () => {
      const cases: Array<[unknown, string]> = [
        [{ slug: 'Upper', name: 'x' }, 'slug'],
        [{ slug: 'has space', name: 'x' }, 'slug'],
        [{ slug: 'a'.repeat(65), name: 'x' }, 'slug'],
        [{ slug: '', name: 'x' }, 'slug'],
        [{ name: 'x' }, 'slug'],
        [{ slug: uniqueName('ok'), name: '' }, 'name'],
        [{ slug: uniqueName('ok'), name: 'n'.repeat(129) }, 'name'],
        [{ slug: uniqueName('ok') }, 'name'],
        [{ slug: uniqueName('ok'), name: 42 }, 'name'],
        [['general'], 'body'],
      ];
      for (const [body, field] of cases) {
        const res = await t.api.post('/api/v1/social/channels', body, { jwt: admin.jwt });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.details[field], JSON.stringify(body)).toEqual(expect.any(String));
      }
      const slugError = await t.api.post('/api/v1/social/channels', { slug: 'Bad!', name: 'x' }, { jwt: admin.jwt });
      expect(slugError.body.details.slug).toContain('^[a-z0-9-]{1,64}$');
      // 64 chars and a 128-code-point name (emoji count once) are at the limits.
      const slug = `${uniqueName('max')}-`.padEnd(64, 'z');
      const atLimit = await t.api.post('/api/v1/social/channels', { slug, name: '🙂'.repeat(128) }, { jwt: admin.jwt });
      expect(atLimit.status).toBe(201);
    });

    it('listing requires a JWT', async () => {
      expect((await t.api.get('/api/v1/social/channels')).status).toBe(401);
      expect((await t.api.get('/api/v1/social/channels', { jwt: 'not-a-jwt' })).status).toBe(401);
    });
  });

  describe('posts and threads', () => {
    it('creates a top-level post (201) with every field', async () => {
      const res = await t.api.post(`/api/v1/social/channels/${general.id}/posts`, { body: 'hello feed' }, { jwt: alice.jwt });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        channelId: general.id,
        authorAgentId: alice.id,
        body: 'hello feed',
        parentPostId: null,
        replyCount: 0,
        createdAt: expect.stringMatching(ISO),
      });
    });

    it('replies attach to the top-level post, replyCount is maintained, the thread is oldest first', async () => {
      const channel = await newChannel();
      const parent = await post(alice, channel.id, 'parent');
      const r1 = await reply(bob, parent.id, 'first reply');
      expect(r1).toEqual({
        id: expect.stringMatching(UUID), channelId: channel.id, authorAgentId: bob.id, body: 'first reply',
        parentPostId: parent.id, replyCount: 0, createdAt: expect.stringMatching(ISO),
      });
      const r2 = await reply(alice, parent.id, 'second reply');
      // A reply to a reply joins the same thread, under the top-level post.
      const r3 = await reply(alice, r1.id, 'reply to a reply');
      expect(r3.parentPostId).toBe(parent.id);
      const r4 = await reply(bob, r3.id, 'deeper still');
      expect(r4.parentPostId).toBe(parent.id);

      const thread = await t.api.get(`/api/v1/social/posts/${parent.id}/thread`, { jwt: bob.jwt });
      expect(thread.status).toBe(200);
      expect(thread.body.parent).toEqual({ ...parent, replyCount: 4 });
      expect(thread.body.replies).toEqual([r1, r2, r3, r4]);
      // The thread of a reply is the thread it belongs to.
      const viaReply = await t.api.get(`/api/v1/social/posts/${r3.id}/thread`, { jwt: bob.jwt });
      expect(viaReply.body).toEqual(thread.body);

      const page = await t.api.get(`/api/v1/social/channels/${channel.id}/posts`, { jwt: alice.jwt });
      expect(page.body).toEqual({ posts: [{ ...parent, replyCount: 4 }], nextCursor: parent.id, hasMore: false });
      const feed = await t.api.get('/api/v1/social/feed', { jwt: alice.jwt });
      expect(feed.body.posts.find((p: { id: string }) => p.id === parent.id).replyCount).toBe(4);
    });

    it('a thread without replies has an empty list', async () => {
      const lonely = await post(bob, general.id, 'no replies');
      const thread = await t.api.get(`/api/v1/social/posts/${lonely.id}/thread`, { jwt: alice.jwt });
      expect(thread.body).toEqual({ parent: lonely, replies: [] });
    });

    it('concurrent replies each count once', async () => {
      const parent = await post(alice, general.id, 'busy thread');
      const replies = await Promise.all(Array.from({ length: 15 }, (_, i) => t.api.post(`/api/v1/social/posts/${parent.id}/replies`, { body: `r${i}` }, { jwt: i % 2 ? alice.jwt : bob.jwt })));
      expect(replies.map((r) => r.status)).toEqual(Array(15).fill(201));
      const thread = await t.api.get(`/api/v1/social/posts/${parent.id}/thread`, { jwt: alice.jwt });
      expect(thread.body.parent.replyCount).toBe(15);
      expect(thread.body.replies).toHaveLength(15);
    });

    it('validates bodies: empty, too long, not a string, missing, NUL, not an object', async () => {
      const parent = await post(alice, general.id, 'target');
      const bad: unknown[] = [{ body: '' }, { body: 'x'.repeat(16_385) }, { body: 7 }, {}, { body: 'a\u0000b' }, { body: '\uD800' }, 'text', null];
      for (const body of bad) {
        for (const path of [`/api/v1/social/channels/${general.id}/posts`, `/api/v1/social/posts/${parent.id}/replies`]) {
          const res = await t.api.post(path, body, { jwt: alice.jwt });
          expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(400);
          expect(Object.keys(res.body.details ?? {}).length, JSON.stringify(res.body)).toBeGreaterThan(0);
        }
      }
      const tooLong = await t.api.post(`/api/v1/social/channels/${general.id}/posts`, { body: 'x'.repeat(16_385) }, { jwt: alice.jwt });
      expect(tooLong.body.details).toEqual({ body: 'must be at most 16384 characters' });
      const malformed = await t.api.post(`/api/v1/social/channels/${general.id}/posts`, undefined, { jwt: alice.jwt, rawBody: '{"body":' });
      expect(malformed.status).toBe(400);
      // 16384 code points of a 2-unit emoji are within the limit.
      const atLimit = await t.api.post(`/api/v1/social/channels/${general.id}/posts`, { body: '💡'.repeat(16_384) }, { jwt: alice.jwt });
      expect(atLimit.status).toBe(201);
      // Nothing was stored by the refused requests.
      const thread = await t.api.get(`/api/v1/social/posts/${parent.id}/thread`, { jwt: alice.jwt });
      expect(thread.body).toEqual({ parent, replies: [] });
    });

    it('unknown channel or post is 404; malformed ids are 400; no JWT is 401', async () => {
      const parent = await post(alice, general.id, 'exists');
      const notFound = [
        t.api.post(`/api/v1/social/channels/${MISSING_ID}/posts`, { body: 'x' }, { jwt: alice.jwt }),
        t.api.get(`/api/v1/social/channels/${MISSING_ID}/posts`, { jwt: alice.jwt }),
        t.api.get(`/api/v1/social/posts/${MISSING_ID}/thread`, { jwt: alice.jwt }),
        t.api.post(`/api/v1/social/posts/${MISSING_ID}/replies`, { body: 'x' }, { jwt: alice.jwt }),
        t.api.post(`/api/v1/social/posts/${MISSING_ID}/reactions`, { emoji: '👍' }, { jwt: alice.jwt }),
        t.api.get(`/api/v1/social/posts/${MISSING_ID}/reactions`, { jwt: alice.jwt }),
      ];
      for (const res of await Promise.all(notFound)) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: expect.any(String) });
      }
      const malformed = [
        t.api.post('/api/v1/social/channels/not-a-uuid/posts', { body: 'x' }, { jwt: alice.jwt }),
        t.api.get('/api/v1/social/channels/not-a-uuid/posts', { jwt: alice.jwt }),
        t.api.get('/api/v1/social/posts/123/thread', { jwt: alice.jwt }),
        t.api.post('/api/v1/social/posts/123/replies', { body: 'x' }, { jwt: alice.jwt }),
        t.api.post('/api/v1/social/posts/123/reactions', { emoji: '👍' }, { jwt: alice.jwt }),
        t.api.get('/api/v1/social/posts/123/reactions', { jwt: alice.jwt }),
      ];
      for (const res of await Promise.all(malformed)) {
        expect(res.status).toBe(400);
        expect(res.body.details).toEqual(expect.any(Object));
      }
      const anonymous = [
        t.api.get('/api/v1/social/feed'),
        t.api.get(`/api/v1/social/channels/${general.id}/posts`),
        t.api.post(`/api/v1/social/channels/${general.id}/posts`, { body: 'x' }),
        t.api.get(`/api/v1/social/posts/${parent.id}/thread`),
        t.api.post(`/api/v1/social/posts/${parent.id}/replies`, { body: 'x' }),
        t.api.post(`/api/v1/social/posts/${parent.id}/reactions`, { emoji: '👍' }),
        t.api.get(`/api/v1/social/posts/${parent.id}/reactions`),
        // An API token is not a session JWT.
        t.api.get('/api/v1/social/feed', { jwt: alice.apiToken }),
      ];
      for (const res of await Promise.all(anonymous)) {
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: expect.any(String) });
      }
      // An uppercase UUID names the same post.
      const upper = await t.api.get(`/api/v1/social/posts/${parent.id.toUpperCase()}/thread`, { jwt: alice.jwt });
      expect(upper.status).toBe(200);
      expect(upper.body.parent.id).toBe(parent.id);
    });

    it('records audit events for posts and replies, never in responses', async () => {
      const parent = await post(bob, general.id, 'audited');
      const r = await reply(alice, parent.id, 'audited reply');
      expect(Object.keys(parent)).not.toContain('audit');
      const db = t.server.app.ctx.database.db;
      const posts = await listAudit(db, 'post-created');
      expect(posts).toContainEqual(expect.objectContaining({ event: 'post-created', actorId: bob.id, subjectId: parent.id }));
      const replies = await listAudit(db, 'reply-created');
      expect(replies).toContainEqual(expect.objectContaining({ event: 'reply-created', actorId: alice.id, subjectId: r.id }));
      const channels = await listAudit(db, 'channel-created');
      expect(channels.length).toBeGreaterThan(0);
    });
  });

  describe('feed and channel pages', () => {
    it('lists only top-level posts, newest first, with the page wrapper', async () => {
      const channel = await newChannel();
      const a = await post(alice, channel.id, 'a');
      const b = await post(bob, channel.id, 'b');
      await reply(alice, a.id, 'reply is not in the feed');
      const page = await t.api.get(`/api/v1/social/channels/${channel.id}/posts`, { jwt: bob.jwt });
      expect(page.status).toBe(200);
      expect(page.body).toEqual({ posts: [b, { ...a, replyCount: 1 }], nextCursor: a.id, hasMore: false });

      const feed = await t.api.get('/api/v1/social/feed?limit=100', { jwt: bob.jwt });
      expect(feed.status).toBe(200);
      expect(feed.body.posts.every((p: { parentPostId: string | null }) => p.parentPostId === null)).toBe(true);
      const ids = feed.body.posts.map((p: { id: string }) => p.id);
      expect(ids.slice(0, 2)).toEqual([b.id, a.id]);
      expect([...ids].sort().reverse()).toEqual(ids);
    });

    it('an empty channel has an empty page with a null cursor', async () => {
      const channel = await newChannel();
      const page = await t.api.get(`/api/v1/social/channels/${channel.id}/posts`, { jwt: alice.jwt });
      expect(page.body).toEqual({ posts: [], nextCursor: null, hasMore: false });
    });

    it('pages visit every post exactly once (120 posts across 2 channels, pages of 25)', async () => {
      const one = await newChannel();
      const two = await newChannel();
      const created: Record<string, string[]> = { [one.id]: [], [two.id]: [] };
      for (let i = 0; i < 120; i++) {
        const channelId = i % 3 === 0 ? two.id : one.id;
        const p = await post(i % 2 ? alice : bob, channelId, `post ${i}`);
        created[channelId]!.push(p.id);
        // Replies in between must never show up on a page nor shift it.
        if (i % 10 === 0) await reply(alice, p.id, `reply ${i}`);
      }

      const walk = async (path: string): Promise<string[]> => {
        const seen: string[] = [];
        let before: string | null = null;
        for (let pages = 0; pages < 50; pages++) {
          const sep = path.includes('?') ? '&' : '?';
          const res = await t.api.get(`${path}${sep}limit=25${before ? `&before=${before}` : ''}`, { jwt: alice.jwt });
          expect(res.status).toBe(200);
          expect(res.body.posts.length).toBeLessThanOrEqual(25);
          seen.push(...res.body.posts.map((p: { id: string }) => p.id));
          expect(res.body.nextCursor).toBe(res.body.posts.at(-1)?.id ?? null);
          if (!res.body.hasMore) return seen;
          before = res.body.nextCursor;
        }
        throw new Error('pagination did not end');
      };

      for (const channel of [one, two]) {
        const seen = await walk(`/api/v1/social/channels/${channel.id}/posts`);
        expect(seen).toEqual([...created[channel.id]!].reverse());
      }
      const feed = await walk('/api/v1/social/feed');
      expect(new Set(feed).size).toBe(feed.length);
      const ours = new Set([...created[one.id]!, ...created[two.id]!]);
      const oursInFeed = feed.filter((id) => ours.has(id));
      expect(oursInFeed).toHaveLength(120);
      expect(oursInFeed).toEqual([...ours].sort().reverse());
    });

    it('default limit is 50 and hasMore says whether older posts exist', async () => {
      const channel = await newChannel();
      const ids: string[] = [];
      for (let i = 0; i < 51; i++) ids.push((await post(alice, channel.id, `p${i}`)).id);
      const first = await t.api.get(`/api/v1/social/channels/${channel.id}/posts`, { jwt: alice.jwt });
      expect(first.body.posts).toHaveLength(50);
      expect(first.body.hasMore).toBe(true);
      const last = await t.api.get(`/api/v1/social/channels/${channel.id}/posts?before=${first.body.nextCursor}`, { jwt: alice.jwt });
      expect(last.body).toEqual({ posts: [expect.objectContaining({ id: ids[0] })], nextCursor: ids[0], hasMore: false });
      const exact = await t.api.get(`/api/v1/social/channels/${channel.id}/posts?limit=51`, { jwt: alice.jwt });
      expect(exact.body.hasMore).toBe(false);
      const beyond = await t.api.get(`/api/v1/social/channels/${channel.id}/posts?before=${ids[0]}`, { jwt: alice.jwt });
      expect(beyond.body).toEqual({ posts: [], nextCursor: null, hasMore: false });
    });

    it('refuses bad limits and unknown or malformed before ids with 400', async () => {
      const channel = await newChannel();
      const other = await newChannel();
      const p = await post(alice, channel.id, 'p');
      const elsewhere = await post(alice, other.id, 'elsewhere');
      const r = await reply(alice, p.id, 'r');
      const cases: Array<[string, string]> = [
        ['limit=0', 'limit'], ['limit=101', 'limit'], ['limit=abc', 'limit'], ['limit=1.5', 'limit'], ['limit=-1', 'limit'],
        ['before=nope', 'before'], [`before=${MISSING_ID}`, 'before'], [`before=${r.id}`, 'before'], [`before=${elsewhere.id}`, 'before'],
      ];
      for (const [query, field] of cases) {
        const res = await t.api.get(`/api/v1/social/channels/${channel.id}/posts?${query}`, { jwt: alice.jwt });
        expect(res.status, query).toBe(400);
        expect(res.body.details[field], query).toEqual(expect.any(String));
      }
      for (const query of ['limit=0', 'limit=101', 'before=nope', `before=${MISSING_ID}`, `before=${r.id}`]) {
        const res = await t.api.get(`/api/v1/social/feed?${query}`, { jwt: alice.jwt });
        expect(res.status, query).toBe(400);
      }
      // A post of any channel is a valid cursor for the feed; limits 1 and 100 are accepted.
      expect((await t.api.get(`/api/v1/social/feed?before=${elsewhere.id}&limit=1`, { jwt: alice.jwt })).status).toBe(200);
      expect((await t.api.get('/api/v1/social/feed?limit=100', { jwt: alice.jwt })).status).toBe(200);
    });

    it('reads before/cursor as room history does: each must be a UUID, then they must name the same post', async () => {
      const p = await post(alice, general.id, 'cursor');
      // Once compared as raw strings first (so two bad values said "must not differ"); now as history.
      const bad = await t.api.get('/api/v1/social/feed?before=abc&cursor=xyz', { jwt: alice.jwt });
      expect(bad.status).toBe(400);
      expect(bad.body.details).toEqual({ before: 'must be a UUID' });
      const differ = await t.api.get(`/api/v1/social/feed?before=${p.id}&cursor=${MISSING_ID}`, { jwt: alice.jwt });
      expect(differ.body.details).toEqual({ cursor: 'cursor and before must not differ' });
      const same = await t.api.get(`/api/v1/social/feed?before=${p.id}&cursor=${p.id.toUpperCase()}`, { jwt: alice.jwt });
      expect(same.status).toBe(200);
      const viaCursor = await t.api.get(`/api/v1/social/feed?cursor=${MISSING_ID}`, { jwt: alice.jwt });
      expect(viaCursor.body.details).toEqual({ cursor: 'is not the id of a post in the feed' });
    });
  });
});
