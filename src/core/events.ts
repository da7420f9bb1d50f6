import type { Message } from './messages/message.js';

/**
 * The outbound fan-out port. Services publish these after their transaction commits; the
 * real-time layer (Socket.IO, with the Redis adapter when configured) implements it. Publishing
 * is awaited so that e.g. a removed member is unsubscribed before the request answers.
 */
export type DomainEvent =
  | { type: 'message.created'; message: Message }
  | { type: 'membership.added'; roomId: string; agentId: string }
  | { type: 'membership.removed'; roomId: string; agentId: string }
  /** `sessionsEnded`: the policy (Authz.sessionsEndWithToken) ends the token's sessions, live sockets included. */
  | { type: 'token.revoked'; tokenId: string; agentId: string; sessionsEnded: boolean }
  /** The agent's sessions end, live sockets included, on every node (PHASE2.md section 7). */
  | { type: 'agent.disabled'; agentId: string }
  | { type: 'agent.enabled'; agentId: string };

export interface EventPublisher {
  publish(event: DomainEvent): Promise<void>;
}

/** For the CLI and for tests that do not care about fan-out. */
export const nullPublisher: EventPublisher = { publish: () => Promise.resolve() };

/** Lets the composition root wire publishers that exist only after the HTTP server does. */
export class PublisherRelay implements EventPublisher {
  private targets: EventPublisher[] = [];
  attach(target: EventPublisher): void {
    this.targets.push(target);
  }
  async publish(event: DomainEvent): Promise<void> {
    for (const target of this.targets) await target.publish(event);
  }
}
