import { describe, expect, it } from 'vitest';
import { MAX_AGENTS_PER_MEMBERSHIP_MESSAGE, type BusPayload, type BusTopic, type ClusterBus } from '../../src/cluster/bus.js';
import { createEventBridge, type NodeState } from '../../src/cluster/event-bridge.js';
import { createMemoryBus } from '../../src/cluster/memory-bus.js';
import { InboxWaiters } from '../../src/core/inbox/inbox-waiters.js';
import { TaskWaiters } from '../../src/core/tasks/task-waiters.js';
import { MembershipCache } from '../../src/core/rooms/membership-cache.js';

const ROOM = '0190a000-0000-7000-8000-000000000001';

/** A one-node bus that records what crosses (published and notified) and lets the test resume it. */
function recordingBus() {
  const inner = createMemoryBus({ warn: () => undefined });
  const published: [BusTopic, unknown][] = [];
  const notified: [BusTopic, unknown][] = [];
  const resumeListeners: (() => void)[] = [];
  const bus: ClusterBus = {
    ...inner,
    publish(topic, payload) {
      published.push([topic, payload]);
      return inner.publish(topic, payload);
    },
    notify(topic, payload) {
      notified.push([topic, payload]);
    },
    onResume: (listener) => void resumeListeners.push(listener),
  };
  return { bus, published, notified, resume: () => resumeListeners.forEach((l) => l()) };
}

function nodeState() {
  const calls: string[] = [];
  const membershipCache = new MembershipCache();
  const inboxWaiters = new InboxWaiters();
  const node: NodeState = {
    membershipCache,
    sessionAuth: { revoked: (id) => void calls.push(`session revoked ${id}`), agentChanged: (id) => void calls.push(`agent changed ${id}`) },
    activity: { record: (u) => void calls.push(`activity ${u.agentId} ${u.state}`) },
    apiTokenAuth: { revoked: (id) => void calls.push(`api token revoked ${id}`) },
    liveOAuth: { revoked: () => undefined, agentChanged: () => undefined },
    webhookOutbox: { lookAgain: () => void calls.push('outbox looks again') },
    inboxWaiters,
    taskWaiters: new TaskWaiters(),
  };
  return { node, calls, membershipCache, inboxWaiters };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the event bridge', () => {
  it('sends a membership change set as one bus message, and the sockets follow it before publish resolves', async () => {
    const { bus, published } = recordingBus();
    const { node } = nodeState();
    const bridge = createEventBridge({ bus, node, otherNodes: true });
    const moves: string[] = [];
    bridge.attachSockets({
      joinRoom: (roomId, agentIds) => void moves.push(`join ${roomId} ${agentIds.join(',')}`),
      leaveRoom: (roomId, agentIds) => void moves.push(`leave ${roomId} ${agentIds.join(',')}`),
    });
    await bridge.publish({ type: 'membership.added', roomId: ROOM, agentIds: ['a', 'b', 'c'] });
    expect(published).toEqual([['membership.added', { roomId: ROOM, agentIds: ['a', 'b', 'c'] }]]);
    expect(moves).toEqual([`join ${ROOM} a,b,c`]);
  });

  it('splits only a change set larger than one message allows, in order', async () => {
    const { bus, published } = recordingBus();
    const bridge = createEventBridge({ bus, node: nodeState().node, otherNodes: true });
    const agentIds = Array.from({ length: MAX_AGENTS_PER_MEMBERSHIP_MESSAGE + 1 }, (_, i) => `agent-${i}`);
    await bridge.publish({ type: 'membership.added', roomId: ROOM, agentIds });
    expect(published.map(([, p]) => (p as BusPayload<'membership.added'>).agentIds.length)).toEqual([MAX_AGENTS_PER_MEMBERSHIP_MESSAGE, 1]);
  });

  it('a removal forgets the cached membership and moves the sockets out', async () => {
    const { bus } = recordingBus();
    const { node, membershipCache } = nodeState();
    const bridge = createEventBridge({ bus, node, otherNodes: true });
    const moves: string[] = [];
    bridge.attachSockets({ joinRoom: () => undefined, leaveRoom: (roomId, agentIds) => void moves.push(`leave ${agentIds.join(',')}`) });
    membershipCache.remember(membershipCache.begin(), ROOM, 'a');
    expect(membershipCache.has(ROOM, 'a')).toBe(true);
    await bridge.publish({ type: 'membership.removed', roomId: ROOM, agentIds: ['a'] });
    expect(membershipCache.has(ROOM, 'a')).toBe(false);
    expect(moves).toEqual(['leave a']);
  });

  it('a revocation reaches both authentication caches, the session one only when the sessions end with the token', async () => {
    const { bus } = recordingBus();
    const { node, calls } = nodeState();
    const bridge = createEventBridge({ bus, node, otherNodes: false });
    await bridge.publish({ type: 'token.revoked', tokenId: 't1', agentId: 'a', sessionsEnded: true });
    await bridge.publish({ type: 'token.revoked', tokenId: 't2', agentId: 'a', sessionsEnded: false });
    await bridge.publish({ type: 'agent.disabled', agentId: 'a' });
    await bridge.publish({ type: 'webhook.created', agentId: 'a' });
    expect(calls).toEqual(['api token revoked t1', 'session revoked t1', 'api token revoked t2', 'agent changed a', 'outbox looks again']);
  });

  it('a committed message wakes held inbox requests here at once, and tells the other nodes once per turn', async () => {
    const { bus, notified } = recordingBus();
    const { node, inboxWaiters } = nodeState();
    const bridge = createEventBridge({ bus, node, otherNodes: true });
    const held = inboxWaiters.wait('reader', [ROOM], 10_000);
    const message = (id: string, senderId: string) => ({ id, roomId: ROOM, senderId, body: 'hi', createdAt: '', seq: 1, threadId: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal' as const, ack: null });
    expect(bridge.publish({ type: 'message.created', message: message('m1', 'writer') })).toBeUndefined(); // no promise on the hot path
    bridge.publish({ type: 'message.created', message: message('m2', 'writer') });
    expect(await held.outcome).toBe('woken');
    expect(notified).toEqual([]);
    await nextTurn();
    expect(notified).toEqual([['messages.committed', { messages: [{ roomId: ROOM, senderId: 'writer' }] }]]);
  });

  it('on one node, tells nobody', async () => {
    const { bus, notified } = recordingBus();
    const bridge = createEventBridge({ bus, node: nodeState().node, otherNodes: false });
    bridge.publish({ type: 'message.created', message: { id: 'm', roomId: ROOM, senderId: 'w', body: 'hi', createdAt: '', seq: 1, threadId: null, editedAt: null, deletedAt: null, data: null, attachments: [], task: null, streaming: false, streamEnd: null, importance: 'normal' as const, ack: null } });
    await nextTurn();
    expect(notified).toEqual([]);
  });

  it('applies what other nodes send (it subscribed to every topic once), and forgets what a gap in the bus may have hidden', async () => {
    const { bus, resume } = recordingBus();
    const { node, calls, membershipCache, inboxWaiters } = nodeState();
    createEventBridge({ bus, node, otherNodes: true });
    const held = inboxWaiters.wait('reader', [ROOM], 10_000);
    // As another node's messages arrive: the bus runs the subscribed handlers.
    await bus.publish('messages.committed', { messages: [{ roomId: ROOM, senderId: 'elsewhere' }] });
    expect(await held.outcome).toBe('woken');
    await bus.publish('agent.changed', { agentId: 'x' });
    expect(calls).toEqual(['agent changed x']);
    membershipCache.remember(membershipCache.begin(), ROOM, 'a');
    resume();
    expect(membershipCache.has(ROOM, 'a')).toBe(false);
    expect(calls).toEqual(['agent changed x', 'outbox looks again']);
  });
});
