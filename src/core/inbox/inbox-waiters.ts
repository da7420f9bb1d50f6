import { Waiters, type Wait } from '../waiters/waiters.js';

/**
 * Held inbox requests (`GET /api/v1/inbox?wait=S`), woken when a message from someone else arrives
 * in one of the waiting agent's rooms: the shared registry (core/waiters/waiters.ts) keyed by room.
 *
 * `wake(roomId, senderId)` is the one entry point for "a message was committed": the event bridge
 * (cluster/event-bridge.ts) calls it for every `message.created` committed here and, with several
 * nodes, for the messages other nodes committed.
 */
export interface InboxWaker {
  /** `attention`: who the message is for the attention of; only they wake from an attention wait. */
  wake(roomId: string, senderId: string, attention?: readonly string[]): void;
}

interface MessageArrived {
  senderId: string;
  attention: readonly string[];
}

/**
 * Other nodes' commits, as this node receives them (the cluster bus's `messages.committed`): followed
 * only while this node holds an inbox waiter, so that a node holding none reads none of them.
 */
export interface CommitFeed {
  /** Resolves once other nodes' commits reach this node. */
  follow(): Promise<void>;
  unfollow(): void;
}

/** One node: every commit is this node's. */
const LOCAL_COMMITS: CommitFeed = { follow: () => Promise.resolve(), unfollow: () => undefined };

export class InboxWaiters implements InboxWaker {
  private readonly registry: Waiters<MessageArrived>;
  private following: Promise<void> = Promise.resolve();

  constructor(feed: CommitFeed = LOCAL_COMMITS) {
    this.registry = new Waiters<MessageArrived>({
      busy: () => {
        this.following = feed.follow();
      },
      idle: () => feed.unfollow(),
    });
  }

  /**
   * Resolves once other nodes' commits reach this node's waiters: a caller registers, awaits this,
   * then reads, so that a commit elsewhere after its read wakes it.
   */
  get ready(): Promise<void> {
    return this.following;
  }

  /** Waiting requests right now. */
  get size(): number {
    return this.registry.size;
  }

  get isClosed(): boolean {
    return this.registry.isClosed;
  }

  /**
   * Registers a waiter for `agentId` on `roomIds` for at most `timeoutMs`. Register before reading
   * the inbox: a message committed between the read and the wait then still wakes it.
   * `attentionOnly`: woken only by a message for its agent's attention (`filter=attention`).
   */
  wait(agentId: string, roomIds: readonly string[], timeoutMs: number, signal?: AbortSignal, attentionOnly = false): Wait {
    // Own messages are never unread: they wake nobody of their sender.
    const matches = (m: MessageArrived): boolean => m.senderId !== agentId && (!attentionOnly || m.attention.includes(agentId));
    return this.registry.wait(roomIds, matches, timeoutMs, signal);
  }

  wake(roomId: string, senderId: string, attention: readonly string[] = []): void {
    this.registry.wakeKeys([roomId], { senderId, attention });
  }

  /** Answers every waiter now and every later one at once (graceful shutdown). */
  close(): void {
    this.registry.close();
  }
}
