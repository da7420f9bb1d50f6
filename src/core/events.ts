import type { ActivityUpdatePayload, LeaseState } from '@agent-messaging/protocol';
import type { Message } from './messages/message.js';
import type { Lease } from './leases/lease.js';
import type { Task } from './tasks/task.js';

/**
 * The outbound fan-out port. Services publish these after their transaction commits, and nothing
 * else: the real-time layer (Socket.IO, with the Redis adapter when configured) shows them to
 * sockets, and the event bridge (cluster/event-bridge.ts) alone decides what reaches the other
 * nodes. Publishing is awaited so that e.g. a removed member is unsubscribed on every node before
 * the request answers.
 */
export type DomainEvent =
  /** `attention`: the agents the message is for the attention of (core/messages/attention.ts). */
  | { type: 'message.created'; message: Message; attention?: readonly string[] }
  /** Edited / deleted (a tombstone): the message as it is now; `actorId` who did it. */
  | { type: 'message.updated'; message: Message; actorId: string }
  | { type: 'message.deleted'; message: Message; actorId: string }
  /** Text appended to an open streamed message (merged appends; docs/streaming.md): to the other members' sockets. */
  | { type: 'message.delta'; roomId: string; messageId: string; senderId: string; seq: number; offset: number; text: string }
  /** One change set: a room's creation adds all its members in one event. */
  | { type: 'membership.added'; roomId: string; agentIds: string[] }
  | { type: 'membership.removed'; roomId: string; agentIds: string[] }
  /** `sessionsEnded`: the policy (Authz.sessionsEndWithToken) ends the token's sessions, live sockets included. */
  | { type: 'token.revoked'; tokenId: string; agentId: string; sessionsEnded: boolean }
  /** The agent's sessions end, live sockets included, on every node (docs/protocol.md, Disabled agents). */
  | { type: 'agent.disabled'; agentId: string }
  | { type: 'agent.enabled'; agentId: string }
  /** A webhook endpoint was registered: every node's outbox looks for endpoints again. */
  | { type: 'webhook.created'; agentId: string }
  /** An activity update sent (after the throttle): to the room's sockets, and remembered by every node (docs/protocol.md, Activity). */
  | { type: 'activity.changed'; update: ActivityUpdatePayload }
  /** A task was created or moved (docs/tasks.md): its two agents' sockets, held task requests on every node, webhooks. */
  | { type: 'task.updated'; task: Task }
  /** An agent acknowledged a message (docs/acknowledgements.md): its sender's sockets, on every node. */
  | { type: 'message.acked'; roomId: string; messageId: string; senderId: string; agentId: string; at: string }
  /** A lease was granted, renewed, released or ran out (docs/leases.md): the room's sockets, and `alsoTo`'s (a holder whose lease an admin released). */
  | { type: 'lease.updated'; lease: Lease; state: LeaseState; alsoTo?: string };

export interface EventPublisher {
  /**
   * A publisher whose work is done when it returns returns nothing; one that must wait (the cluster
   * bus) returns a promise, and whoever published waits for it.
   */
  publish(event: DomainEvent): void | Promise<void>;
}

/** For the CLI and for tests that do not care about fan-out. */
export const nullPublisher: EventPublisher = { publish: () => undefined };

/**
 * Lets the composition root wire publishers that exist only after the HTTP server does. Targets
 * run one after the other, in the order attached; a promise is made only when one returns one
 * (every message sent is published: most targets are synchronous).
 */
export class PublisherRelay implements EventPublisher {
  private targets: EventPublisher[] = [];
  attach(target: EventPublisher): void {
    this.targets.push(target);
  }
  publish(event: DomainEvent, from = 0): void | Promise<void> {
    for (let i = from; i < this.targets.length; i++) {
      const pending = this.targets[i]!.publish(event);
      if (pending !== undefined) return pending.then(() => this.publish(event, i + 1));
    }
  }
}
