import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/core/audit/audit.store.js';
import { newAgent, type TestAgent } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

const VS16 = '\uFE0F';

describe('social reactions', () => {
  const { server, api } = useTestServer();
  let alice: TestAgent;
  let bob: TestAgent;
  let generalId: string;

  const newPost = async (): Promise<{ id: string }> => {
    const res = await api.post(`/api/v1/social/channels/${generalId}/posts`, { body: 'react to me' }, { jwt: alice.jwt });
    expect(res.status).toBe(201);
    return res.body;
  };
  const toggle = (agent: TestAgent, postId: string, emoji: unknown) =>
    api.post(`/api/v1/social/posts/${postId}/reactions`, { emoji }, { jwt: agent.jwt });
  const reactions = async (agent: TestAgent, postId: string) => {
    const res = await api.get(`/api/v1/social/posts/${postId}/reactions`, { jwt: agent.jwt });
    expect(res.status).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    alice = await newAgent(api);
    bob = await newAgent(api);
    const channels = await api.get('/api/v1/social/channels', { jwt: alice.jwt });
    generalId = channels.body.channels[0].id;
  });

  it('toggles per agent and emoji, with counts and reactedByMe per caller', async () => {
    const post = await newPost();
    expect(await reactions(alice, post.id)).toEqual({ reactions: [] });

    const first = await toggle(alice, post.id, '👍');
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ action: 'added', emoji: '👍' });
    expect((await toggle(bob, post.id, '👍')).body).toEqual({ action: 'added', emoji: '👍' });
    expect((await toggle(bob, post.id, '💡')).body).toEqual({ action: 'added', emoji: '💡' });

    expect(await reactions(alice, post.id)).toEqual({
      reactions: [{ emoji: '👍', count: 2, reactedByMe: true }, { emoji: '💡', count: 1, reactedByMe: false }],
    });
    expect(await reactions(bob, post.id)).toEqual({
      reactions: [{ emoji: '👍', count: 2, reactedByMe: true }, { emoji: '💡', count: 1, reactedByMe: true }],
    });

    // A repeat removes; an emoji whose count drops to 0 disappears from the listing.
    expect((await toggle(alice, post.id, '👍')).body).toEqual({ action: 'removed', emoji: '👍' });
    expect((await toggle(bob, post.id, '💡')).body).toEqual({ action: 'removed', emoji: '💡' });
    expect(await reactions(alice, post.id)).toEqual({ reactions: [{ emoji: '👍', count: 1, reactedByMe: false }] });
    expect((await toggle(alice, post.id, '🤔')).body).toEqual({ action: 'added', emoji: '🤔' });
    expect((await toggle(alice, post.id, '👍')).body).toEqual({ action: 'added', emoji: '👍' });
    expect(await reactions(bob, post.id)).toEqual({
      reactions: [{ emoji: '👍', count: 2, reactedByMe: true }, { emoji: '🤔', count: 1, reactedByMe: false }],
    });
  });

  it('reactions of one post do not leak into another; replies take reactions too', async () => {
    const one = await newPost();
    const two = await newPost();
    const reply = await api.post(`/api/v1/social/posts/${one.id}/replies`, { body: 'reply' }, { jwt: bob.jwt });
    await toggle(alice, one.id, '💡');
    expect((await toggle(alice, reply.body.id, '🤔')).body).toEqual({ action: 'added', emoji: '🤔' });
    expect(await reactions(alice, two.id)).toEqual({ reactions: [] });
    expect(await reactions(alice, reply.body.id)).toEqual({ reactions: [{ emoji: '🤔', count: 1, reactedByMe: true }] });
    expect(await reactions(alice, one.id)).toEqual({ reactions: [{ emoji: '💡', count: 1, reactedByMe: true }] });
  });

  it('takes an allowed emoji followed by U+FE0F as that emoji', async () => {
    const post = await newPost();
    expect((await toggle(alice, post.id, `👍${VS16}`)).body).toEqual({ action: 'added', emoji: '👍' });
    // The plain form is the same reaction: it toggles it off.
    expect((await toggle(alice, post.id, '👍')).body).toEqual({ action: 'removed', emoji: '👍' });
    expect((await toggle(alice, post.id, `💡${VS16}`)).body).toEqual({ action: 'added', emoji: '💡' });
    expect((await toggle(alice, post.id, `💡${VS16}`)).body).toEqual({ action: 'removed', emoji: '💡' });
    expect((await toggle(bob, post.id, `🤔${VS16}`)).body).toEqual({ action: 'added', emoji: '🤔' });
    expect(await reactions(bob, post.id)).toEqual({ reactions: [{ emoji: '🤔', count: 1, reactedByMe: true }] });
  });

  it('refuses anything else with 400 and details, and stores nothing', async () => {
    const post = await newPost();
    const refused: unknown[] = [
      '❤️', '🔥', '👎', 'thumbs up', ':+1:', '', ' 👍', '👍 ', '👍👍', `👍${VS16}${VS16}`, VS16,
      '👍🏽', '👍🏻', '👍🏿', '💡\uFE0E', '🤔\u200D', 42, null, true, ['👍'], { emoji: '👍' },
    ];
    for (const emoji of refused) {
      const res = await toggle(alice, post.id, emoji);
      expect(res.status, JSON.stringify(emoji)).toBe(400);
      expect(res.body.details.emoji, JSON.stringify(emoji)).toEqual(expect.any(String));
    }
    const skinTone = await toggle(alice, post.id, '👍🏽');
    expect(skinTone.body).toEqual({ error: expect.any(String), details: { emoji: 'must be one of 👍, 🤔, 💡' } });

    const missing = await api.post(`/api/v1/social/posts/${post.id}/reactions`, {}, { jwt: alice.jwt });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual({ emoji: expect.any(String) });
    const noBody = await api.post(`/api/v1/social/posts/${post.id}/reactions`, undefined, { jwt: alice.jwt });
    expect(noBody.status).toBe(400);
    expect(noBody.body.details).toEqual(expect.any(Object));
    const notObject = await api.post(`/api/v1/social/posts/${post.id}/reactions`, ['👍'], { jwt: alice.jwt });
    expect(notObject.status).toBe(400);

    expect(await reactions(alice, post.id)).toEqual({ reactions: [] });
  });

  it('the database refuses any other emoji too', async () => {
    const post = await newPost();
    const db = server.app.ctx.database.db;
    const row = (emoji: string) => ({ post_id: post.id, agent_id: alice.id, emoji, created_at: new Date().toISOString() });
    await expect(db.insertInto('social_reactions').values(row('👍🏽')).execute()).rejects.toThrow();
    await expect(db.insertInto('social_reactions').values(row('❤️')).execute()).rejects.toThrow();
    await db.insertInto('social_reactions').values(row('💡')).execute();
    // And the primary key refuses a duplicate row.
    await expect(db.insertInto('social_reactions').values(row('💡')).execute()).rejects.toThrow();
    expect(await reactions(alice, post.id)).toEqual({ reactions: [{ emoji: '💡', count: 1, reactedByMe: true }] });
  });

  it('concurrent toggles by one agent leave a state consistent with the answers', async () => {
    for (const parallel of [20, 21]) {
      const post = await newPost();
      const answers = await Promise.all(Array.from({ length: parallel }, () => toggle(bob, post.id, '🤔')));
      expect(answers.map((a) => a.status)).toEqual(Array(parallel).fill(200));
      const added = answers.filter((a) => a.body.action === 'added').length;
      const removed = answers.filter((a) => a.body.action === 'removed').length;
      expect(added + removed).toBe(parallel);
      // Starting from none, each answer flips the state: present exactly when added - removed is 1.
      expect(added - removed === 0 || added - removed === 1).toBe(true);
      const listed = await reactions(bob, post.id);
      const expected = added - removed === 1 ? [{ emoji: '🤔', count: 1, reactedByMe: true }] : [];
      expect(listed).toEqual({ reactions: expected });
      const rows = await server.app.ctx.database.db.selectFrom('social_reactions').selectAll().where('post_id', '=', post.id).execute();
      expect(rows).toHaveLength(added - removed);
      // An odd number of toggles from none ends with the reaction present.
      if (parallel % 2 === 1) expect(rows).toHaveLength(1);
      else expect(rows).toHaveLength(0);
    }
  });

  it('concurrent toggles by many agents on one emoji count each agent once', async () => {
    const post = await newPost();
    const agents = [alice, bob, await newAgent(api), await newAgent(api)];
    // Each agent toggles three times at once: every agent ends with its reaction present.
    const answers = await Promise.all(agents.flatMap((agent) => [0, 1, 2].map(() => toggle(agent, post.id, '👍'))));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(await reactions(alice, post.id)).toEqual({ reactions: [{ emoji: '👍', count: 4, reactedByMe: true }] });
  });

  it('records reaction-toggled audit events, not sent to clients', async () => {
    const post = await newPost();
    const added = await toggle(alice, post.id, '💡');
    const removed = await toggle(alice, post.id, '💡');
    expect(Object.keys(added.body).sort()).toEqual(['action', 'emoji']);
    expect(Object.keys(removed.body).sort()).toEqual(['action', 'emoji']);
    const audit = (await listAudit(server.app.ctx.database.db, 'reaction-toggled')).filter((r) => r.subjectId === post.id);
    expect(audit.map((r) => r.detail)).toEqual([{ emoji: '💡', action: 'removed' }, { emoji: '💡', action: 'added' }]);
    expect(audit.every((r) => r.actorId === alice.id)).toBe(true);
  });
});
