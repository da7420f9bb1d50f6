import type { ApiTokenAuth } from '../core/auth/api-token-auth.js';
import type { LiveOAuthRequests } from '../core/oauth/live-requests.js';
import type { SessionAuth } from '../core/auth/session-auth.js';
import type { ActivityService } from '../core/activity/activity.service.js';
import type { DomainEvent, EventPublisher } from '../core/events.js';
import type { InboxWaker } from '../core/inbox/inbox-waiters.js';
import type { TaskWaker } from '../core/tasks/task-waiters.js';
import type { MembershipCache } from '../core/rooms/membership-cache.js';
import type { WebhookOutbox } from '../core/webhooks/webhook-outbox.js';
import { BUS_TOPICS, MAX_AGENTS_PER_MEMBERSHIP_MESSAGE, MAX_WAKES_PER_MESSAGE, type BusHandler, type BusPayload, type BusTopic, type ClusterBus } from './bus.js';

/**
 * The one road from the domain to the other nodes. Services publish typed domain events
 * (core/events.ts) and nothing else; this module alone decides which of them cross (CROSSINGS),
 * publishes them on the cluster bus, subscribes to the bus once, and applies what arrives on every
 * node, this one included (APPLY): membership caches, socket subscriptions, session caches, the
 * webhook outbox's "no endpoint" and held inbox requests.
 *
 * Two ways to cross:
 * - `publish`: acknowledged by every live node (or the bus's timeout) before the request that
 *   caused it answers; the bus runs this node's appliers too. For changes that must hold on every
 *   node once the client hears of them (a removed member receives nothing more, a revoked token
 *   authenticates nowhere).
 * - `hint`: applied here at once, told to the other nodes without waiting, batched per turn of the
 *   event loop. For frequent news whose loss costs a delay, never correctness (an inbox waiter that
 *   misses one answers at its timeout and the next read finds the message).
 *
 * Adding an event that crosses nodes (docs/architecture.md, "Something every node must learn"): its
 * topic and payload schema in BUS_TOPICS (bus.ts), one entry in CROSSINGS (which event, which
 * topic, what payload) and one in APPLY (what each node does with it); the types make the last
 * one mandatory.
 */

/** This node's state that other nodes' changes reach (each built once, in context.ts). */
export interface NodeState {
  /** Membership checks answered from memory; null when they are not cached. */
  membershipCache: Pick<MembershipCache, 'forget' | 'clear'> | null;
  sessionAuth: Pick<SessionAuth, 'revoked' | 'agentChanged'>;
  apiTokenAuth: Pick<ApiTokenAuth, 'revoked'>;
  webhookOutbox: Pick<WebhookOutbox, 'lookAgain'>;
  inboxWaiters: InboxWaker;
  taskWaiters: TaskWaker;
  activity: Pick<ActivityService, 'record'>;
  /** OAuth requests in flight at `/mcp`, closed when their grant, API token or agent ends. */
  liveOAuth: Pick<LiveOAuthRequests, 'revoked' | 'agentChanged'>;
}

/** The real-time layer's part (attached once its namespace exists): this node's sockets follow membership changes. */
export interface SocketMembership {
  /** Resolves once this node's sockets would get the room's next broadcast (the change's acknowledgement waits for it). */
  joinRoom(roomId: string, agentIds: readonly string[]): void | Promise<void>;
  leaveRoom(roomId: string, agentIds: readonly string[]): void;
}

export interface EventBridge extends EventPublisher {
  attachSockets(sockets: SocketMembership): void;
}

type Outgoing = { [T in BusTopic]: { how: 'publish' | 'hint'; topic: T; payload: BusPayload<T> } }[BusTopic];
type Crossings = { [K in DomainEvent['type']]?: (event: Extract<DomainEvent, { type: K }>) => Outgoing | Outgoing[] };

const publish = <T extends BusTopic>(topic: T, payload: BusPayload<T>): Outgoing => ({ how: 'publish', topic, payload }) as Outgoing;
const hint = <T extends BusTopic>(topic: T, payload: BusPayload<T>): Outgoing => ({ how: 'hint', topic, payload }) as Outgoing;

/** A change set as few bus messages as the topic's schema allows: one, for every change the service can make. */
const inChunks = <T>(items: readonly T[], size: number): T[][] => {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
};

/** Which domain events cross, as what. An event without an entry stays on its node. */
const CROSSINGS: Crossings = {
  'membership.added': ({ roomId, agentIds }) =>
    inChunks(agentIds, MAX_AGENTS_PER_MEMBERSHIP_MESSAGE).map((chunk) => publish('membership.added', { roomId, agentIds: chunk })),
  'membership.removed': ({ roomId, agentIds }) =>
    inChunks(agentIds, MAX_AGENTS_PER_MEMBERSHIP_MESSAGE).map((chunk) => publish('membership.removed', { roomId, agentIds: chunk })),
  'token.revoked': ({ tokenId, sessionsEnded }) => publish('token.revoked', { tokenId, sessionsEnded }),
  'agent.disabled': ({ agentId }) => publish('agent.changed', { agentId }),
  'agent.enabled': ({ agentId }) => publish('agent.changed', { agentId }),
  'webhook.created': ({ agentId }) => publish('webhook.created', { agentId }),
  'message.created': ({ message, attention }) =>
    hint('messages.committed', { messages: [{ roomId: message.roomId, senderId: message.senderId, ...(attention?.length ? { attention: [...attention] } : {}) }] }),
  // At most one per agent and room per second (the service's throttle): not batched.
  'activity.changed': ({ update }) => hint('activity.changed', update),
  'task.updated': ({ task }) => hint('task.updated', { id: task.id, requesterId: task.requesterId, assigneeId: task.assigneeId, state: task.state, queueId: task.queueId }),
};

type Appliers = { [T in BusTopic]: BusHandler<T> };

/** What every node (the publishing one included) does with each topic. */
const APPLY = (node: NodeState, sockets: () => SocketMembership | null): Appliers => ({
  'membership.added': ({ roomId, agentIds }) => sockets()?.joinRoom(roomId, agentIds),
  // The cache entry is forgotten, then the agent's sockets leave the room: acknowledged after both,
  // so no node delivers this room to the agent once the removal answers.
  'membership.removed': ({ roomId, agentIds }) => {
    for (const agentId of agentIds) node.membershipCache?.forget(roomId, agentId);
    sockets()?.leaveRoom(roomId, agentIds);
  },
  // The token no longer authenticates as a bearer (`/mcp`) whatever the policy; its cached session
  // state is forgotten when its sessions ended with it (strict mode; absent means true).
  'token.revoked': ({ tokenId, sessionsEnded }) => {
    node.apiTokenAuth.revoked(tokenId);
    if (sessionsEnded !== false) node.sessionAuth.revoked(tokenId);
    // An OAuth grant (its id travels as a token's) or the API token grants came from: whatever the policy.
    node.liveOAuth.revoked(tokenId);
  },
  'agent.changed': ({ agentId }) => {
    node.sessionAuth.agentChanged(agentId);
    node.liveOAuth.agentChanged(agentId);
  },
  'webhook.created': () => node.webhookOutbox.lookAgain(),
  'activity.changed': (update) => node.activity.record(update),
  'task.updated': (change) => node.taskWaiters.wake(change),
  'messages.committed': ({ messages }) => {
    for (const { roomId, senderId, attention } of messages) node.inboxWaiters.wake(roomId, senderId, attention ?? []);
  },
});

export interface EventBridgeOptions {
  bus: ClusterBus;
  node: NodeState;
  /** False on one node: hints are applied here and told to nobody (no batching either). */
  otherNodes: boolean;
}

export function createEventBridge({ bus, node, otherNodes }: EventBridgeOptions): EventBridge {
  let sockets: SocketMembership | null = null;
  const appliers = APPLY(node, () => sockets);
  for (const topic of Object.keys(BUS_TOPICS) as BusTopic[]) bus.subscribe(topic, appliers[topic] as BusHandler<BusTopic>);
  // After a gap in the bus, changes made elsewhere may have been missed: forget what they would have corrected.
  bus.onResume(() => {
    node.membershipCache?.clear();
    node.webhookOutbox.lookAgain();
  });

  // Hints wait for the end of this turn of the event loop (a group commit's messages travel
  // together); only `messages.committed` is a hint today, each (room, sender) pair once.
  let hints = new Map<string, { roomId: string; senderId: string; attention?: string[] }>();
  const flushHints = (): void => {
    if (hints.size === 0) return;
    const messages = [...hints.values()];
    hints = new Map();
    bus.notify('messages.committed', { messages });
  };
  const sendHint = (outgoing: Outgoing): void => {
    (appliers[outgoing.topic] as BusHandler<BusTopic>)(outgoing.payload); // here, at once
    if (!otherNodes) return;
    if (outgoing.topic !== 'messages.committed') {
      bus.notify(outgoing.topic, outgoing.payload);
      return;
    }
    if (hints.size === 0) setImmediate(flushHints);
    for (const pair of outgoing.payload.messages) {
      const key = `${pair.roomId} ${pair.senderId}`;
      const held = hints.get(key);
      // One pair per (room, sender) and turn: the attention of its messages together, within the schema's bound.
      const attention = [...new Set([...(held?.attention ?? []), ...(pair.attention ?? [])])];
      if (held && attention.length > MAX_AGENTS_PER_MEMBERSHIP_MESSAGE) {
        flushHints();
        hints.set(key, pair); // flushed with the rest of the turn (its flush is already due)
        continue;
      }
      hints.set(key, attention.length > 0 ? { ...pair, attention } : pair);
    }
    if (hints.size >= MAX_WAKES_PER_MESSAGE) flushHints();
  };

  const send = (outgoing: Outgoing): void | Promise<void> =>
    outgoing.how === 'publish' ? bus.publish(outgoing.topic, outgoing.payload) : sendHint(outgoing);

  return {
    publish(event) {
      const cross = CROSSINGS[event.type] as ((e: DomainEvent) => Outgoing | Outgoing[]) | undefined;
      if (cross === undefined) return;
      const outgoing = cross(event);
      if (!Array.isArray(outgoing)) return send(outgoing);
      // A change set of more than one message (beyond MAX_AGENTS_PER_MEMBERSHIP_MESSAGE): in order.
      return outgoing.reduce<Promise<void>>((done, o) => done.then(() => send(o)), Promise.resolve());
    },
    attachSockets(target) {
      sockets = target;
    },
  };
}
