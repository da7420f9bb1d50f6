import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, newAgent, newRoom, type TestAgent, type TestRoom } from '../helpers/api.js';
import { useTestServer } from '../helpers/suite.js';

// docs/protocol.md, Attention: each cause on its own. A message is for the attention of X when X did
// not send it and X is in its mentions, or its room is direct, or it replies in a thread whose root
// X sent, or its replyTo names a message X sent (tasks: docs/protocol.md, Tasks).

describe('attention, cause by cause', () => {
  const { api } = useTestServer();
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let dave: TestAgent;
  let room: TestRoom;
  let everyone: TestAgent[];

  beforeAll(async () => {
    const admin = await newAdmin(api);
    [alice, bob, carol, dave] = [await newAgent(api), await newAgent(api), await newAgent(api), await newAgent(api)];
    everyone = [alice, bob, carol, dave];
    room = await newRoom(api, admin, everyone);
  });

  const send = async (agent: TestAgent, body: Record<string, unknown>, roomId = room.id): Promise<{ id: string; seq: number; threadId: string | null }> => {
    const res = await api.post(`/api/v1/rooms/${roomId}/messages`, body, { jwt: agent.jwt });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  /** The names of the agents whose attention inbox holds the message (nothing is ever read here). */
  const forAttentionOf = async (messageId: string): Promise<string[]> => {
    const names: string[] = [];
    for (const agent of everyone) {
      const page = await api.get('/api/v1/inbox?filter=attention&limit=100', { jwt: agent.jwt });
      expect(page.status).toBe(200);
      const item = (page.body.messages as { id: string; attention: boolean }[]).find((m) => m.id === messageId);
      if (item) {
        expect(item.attention).toBe(true);
        names.push(agent.name);
      }
      // The unfiltered inbox marks it the same way.
      const all = await api.get('/api/v1/inbox?limit=100', { jwt: agent.jwt });
      const listed = (all.body.messages as { id: string; attention: boolean }[]).find((m) => m.id === messageId);
      if (listed) expect(listed.attention, agent.name).toBe(item !== undefined);
    }
    return names.sort();
  };
  const names = (...agents: TestAgent[]): string[] => agents.map((a) => a.name).sort();

  it('a plain message of a group room is for nobody\'s attention', async () => {
    const plain = await send(alice, { body: 'plain' });
    expect(await forAttentionOf(plain.id)).toEqual([]);
  });

  it('mentions: the mentioned members only, never the sender', async () => {
    const mention = await send(dave, { body: 'carol and me', mentions: [carol.id, dave.id] });
    expect(await forAttentionOf(mention.id)).toEqual(names(carol));
  });

  it('a direct room: every message is for the other agent\'s attention, never the sender\'s', async () => {
    const opened = await api.post('/api/v1/direct-rooms', { agentId: bob.id }, { jwt: alice.jwt });
    expect(opened.status).toBe(201);
    const fromAlice = await send(alice, { body: 'just us' }, opened.body.id);
    expect(await forAttentionOf(fromAlice.id)).toEqual(names(bob));
    const fromBob = await send(bob, { body: 'just us, back' }, opened.body.id);
    expect(await forAttentionOf(fromBob.id)).toEqual(names(alice));
    // A mention of the other agent too: one message for its attention, counted once.
    const both = await send(alice, { body: 'bob, again', mentions: [bob.id] }, opened.body.id);
    expect(await forAttentionOf(both.id)).toEqual(names(bob));
    const listed = ((await api.get('/api/v1/rooms', { jwt: bob.jwt })).body.rooms as { id: string; attentionCount: number; unreadCount: number }[]).find((r) => r.id === opened.body.id);
    expect(listed).toMatchObject({ unreadCount: 2, attentionCount: 2 });
  });

  it('threads: the root\'s sender for every reply in it, the replyTo\'s sender; another participant of the thread is not', async () => {
    const root = await send(alice, { body: 'root by alice' });
    // A reply to the root: its sender is both the root's and the replyTo's.
    const first = await send(bob, { body: 'bob replies', replyTo: root.id });
    expect(first.threadId).toBe(root.id);
    expect(await forAttentionOf(first.id)).toEqual(names(alice));
    // A reply to bob's reply: bob (its replyTo) and alice (the thread's root).
    const second = await send(carol, { body: 'carol answers bob', replyTo: first.id });
    expect(second.threadId).toBe(root.id);
    expect(await forAttentionOf(second.id)).toEqual(names(alice, bob));
    // A reply to carol's: carol and alice; bob took part in the thread but is neither.
    const third = await send(dave, { body: 'dave answers carol', replyTo: second.id });
    expect(await forAttentionOf(third.id)).toEqual(names(alice, carol));
    // The root's sender replying in its own thread: only the replyTo's sender.
    const own = await send(alice, { body: 'alice answers dave', replyTo: third.id });
    expect(await forAttentionOf(own.id)).toEqual(names(dave));
    // A reply to one's own message, in a thread another agent started: the root's sender only.
    const self = await send(dave, { body: 'dave adds to his own', replyTo: third.id });
    expect(await forAttentionOf(self.id)).toEqual(names(alice));
  });

  it('the causes add up without repeats: a mention of the replyTo\'s sender in a thread', async () => {
    const root = await send(carol, { body: 'root by carol' });
    const reply = await send(bob, { body: 'bob in carol\'s thread', replyTo: root.id });
    const mixed = await send(dave, { body: 'bob, alice', replyTo: reply.id, mentions: [bob.id, alice.id] });
    expect(await forAttentionOf(mixed.id)).toEqual(names(alice, bob, carol));
  });
});
