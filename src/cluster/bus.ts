import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { TASK_STATES } from '@agent-messaging/protocol';

/**
 * The one way nodes tell each other something: a typed publish/subscribe with acknowledgement.
 * `publish` runs the topic's handlers on every live node (this one included) and resolves once each
 * node acknowledged, having run all its handlers, or once BUS_ACK_TIMEOUT_MS passed; a node that did
 * not answer in time (frozen, cut off) is logged and not waited for, it applies the message when it
 * reads it. Redis failures are logged the same way: publishing never throws, the change it announces
 * is committed already.
 *
 * One node: handlers run in-process (memory-bus.ts). Several nodes: Redis pub/sub (redis-bus.ts).
 * Only the event bridge (event-bridge.ts) publishes and subscribes: services publish domain events.
 */

const Id = Type.String({ minLength: 1, maxLength: 64 });
/** The most agents of one membership message: a room has at most 1001 at creation; event-bridge.ts splits a larger set. */
export const MAX_AGENTS_PER_MEMBERSHIP_MESSAGE = 1024;
/** The most (room, sender) pairs in one `messages.committed`: the bridge sends a fuller turn's as several. */
export const MAX_WAKES_PER_MESSAGE = 1024;
const AgentIds = Type.Array(Id, { minItems: 1, maxItems: MAX_AGENTS_PER_MEMBERSHIP_MESSAGE });

/**
 * Topic -> payload schema; payloads are checked against it when they arrive from another node.
 * Adding a topic is one line here, and an entry in event-bridge.ts (the only publisher and
 * subscriber of the bus).
 */
export const BUS_TOPICS = {
  /** Memberships were added (one change set: a room's creation is one message): every node subscribes the agents' live sockets to the room. */
  'membership.added': Type.Object({ roomId: Id, agentIds: AgentIds }),
  /** Memberships were removed: every node forgets its cached memberships and unsubscribes the agents' sockets. */
  'membership.removed': Type.Object({ roomId: Id, agentIds: AgentIds }),
  /**
   * A token was revoked: every node stops accepting it as a bearer (`/mcp`) and, when its sessions
   * ended with it (strict mode; absent means true), stops trusting its cached session state.
   */
  'token.revoked': Type.Object({ tokenId: Id, sessionsEnded: Type.Optional(Type.Boolean()) }),
  /** An agent was disabled or enabled: every node forgets its cached state of the agent. */
  'agent.changed': Type.Object({ agentId: Id }),
  /** A webhook endpoint was registered: every node's outbox stops trusting "no endpoint" (webhook-outbox.ts). */
  'webhook.created': Type.Object({ agentId: Id }),
  /**
   * Messages committed on the sending node (batched per turn of its event loop): every other node
   * wakes its held inbox requests of those rooms. Sent with `notify` (no acknowledgement).
   */
  'messages.committed': Type.Object({
    messages: Type.Array(Type.Object({
      roomId: Id,
      senderId: Id,
      /** Whose attention the pair's messages are for: only they wake from an attention wait. */
      attention: Type.Optional(Type.Array(Id, { maxItems: MAX_AGENTS_PER_MEMBERSHIP_MESSAGE })),
    }), { maxItems: MAX_WAKES_PER_MESSAGE }),
  }),

  /**
   * An activity update sent on its node (after its throttle): every other node remembers it for its
   * members listing (the sockets got it through the room's channel). Sent with `notify`.
   */
  'activity.changed': Type.Object({
    roomId: Id,
    agentId: Id,
    state: Type.Union([Type.Literal('typing'), Type.Literal('working'), Type.Literal('idle')]),
    text: Type.String({ maxLength: 80 }),
    expiresAt: Type.Union([Type.String({ maxLength: 40 }), Type.Null()]),
  }),

  /**
   * A task was created or moved (docs/tasks.md): every other node wakes its held task requests
   * (task-waiters.ts). Sent with `notify`: a waiter that misses one answers at its timeout.
   */
  'task.updated': Type.Object({
    id: Id,
    requesterId: Id,
    assigneeId: Id,
    state: Type.Union(TASK_STATES.map((s) => Type.Literal(s))),
  }),
} satisfies Record<string, TSchema>;

export type BusTopic = keyof typeof BUS_TOPICS;

/**
 * Topics a node receives only while it follows them (ClusterBus.follow): hints that only something
 * held on a node needs. `messages.committed` wakes held inbox reads, and a node holding none (most
 * of a big cluster's nodes at any moment) would otherwise read every other node's commits: work that
 * does not follow members. Their hints go on a channel of their own, which Redis delivers only to
 * the nodes subscribed to it.
 */
export const FOLLOWED_TOPICS = ['messages.committed'] as const satisfies readonly BusTopic[];
export type FollowedTopic = (typeof FOLLOWED_TOPICS)[number];
export const isFollowedTopic = (topic: BusTopic): topic is FollowedTopic => (FOLLOWED_TOPICS as readonly BusTopic[]).includes(topic);
export type BusPayload<T extends BusTopic> = Static<(typeof BUS_TOPICS)[T]>;
export type BusHandler<T extends BusTopic> = (payload: BusPayload<T>) => void | Promise<void>;

/** How long `publish` waits for the other nodes' acknowledgements: the one timeout of the bus. */
export const BUS_ACK_TIMEOUT_MS = 2000;
/** How long `follow` waits for its subscription before it lets the caller go on. */
export const FOLLOW_WAIT_MS = 1000;
/** How long a followed topic is still received after its last `unfollow`. */
export const FOLLOW_LINGER_MS = 10_000;

export interface ClusterBus {
  /**
   * True while messages from other nodes are known to reach this node (always on one node). State
   * kept from them (the membership cache) must not be trusted while false.
   */
  readonly live: boolean;
  /** Runs the topic's handlers on every live node; resolves when all acknowledged or the timeout passed. */
  publish<T extends BusTopic>(topic: T, payload: BusPayload<T>): Promise<void>;
  /**
   * Tells the other nodes only, without waiting for anything: for frequent hints whose loss costs
   * a delay, never correctness (an inbox waiter that misses one answers at its timeout and the
   * next read finds the message). This node's handlers do not run: the caller acted here already.
   */
  notify<T extends BusTopic>(topic: T, payload: BusPayload<T>): void;
  /** Adds a handler of the topic on this node; a node acknowledges after all its handlers ran. */
  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): void;
  /**
   * Starts receiving a followed topic from the other nodes (FOLLOWED_TOPICS; every other topic is
   * always received). Resolves once it is received (at once on one node; within FOLLOW_WAIT_MS
   * when Redis is slow or away, after which a hint missed costs its waiter a delay). Calls nest: the
   * topic is received until as many `unfollow`s came, and then for FOLLOW_LINGER_MS more, so that a
   * node that keeps taking and answering held requests does not subscribe and unsubscribe each time.
   */
  follow(topic: FollowedTopic): Promise<void>;
  unfollow(topic: FollowedTopic): void;
  /** Called each time the bus becomes live again after a gap: whatever was sent meanwhile was missed. */
  onResume(listener: () => void): void;
  close(): Promise<void>;
}

export interface BusLogger {
  warn(obj: object, msg: string): void;
}

const checks = Object.fromEntries(
  Object.entries(BUS_TOPICS).map(([topic, schema]) => [topic, TypeCompiler.Compile(schema)]),
) as { [T in BusTopic]: TypeCheck<(typeof BUS_TOPICS)[T]> };

export const isBusTopic = (topic: unknown): topic is BusTopic => typeof topic === 'string' && Object.hasOwn(BUS_TOPICS, topic);

/** A payload that came from another node, when it is what its topic says. */
export const isValidPayload = <T extends BusTopic>(topic: T, payload: unknown): payload is BusPayload<T> => checks[topic].Check(payload);

const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** This node's handlers, shared by both implementations. */
export class LocalHandlers {
  private readonly handlers = new Map<BusTopic, BusHandler<BusTopic>[]>();

  constructor(private readonly logger: BusLogger) {}

  add<T extends BusTopic>(topic: T, handler: BusHandler<T>): void {
    const list = this.handlers.get(topic) ?? [];
    list.push(handler as BusHandler<BusTopic>);
    this.handlers.set(topic, list);
  }

  /** Runs every handler of the topic in order; a failing one is logged and does not stop the others. */
  async run<T extends BusTopic>(topic: T, payload: BusPayload<T>): Promise<void> {
    for (const handler of this.handlers.get(topic) ?? []) {
      try {
        await handler(payload);
      } catch (err) {
        this.logger.warn({ topic, err: { message: errorMessage(err) } }, 'cluster bus handler failed');
      }
    }
  }
}
