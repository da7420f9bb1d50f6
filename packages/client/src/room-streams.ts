import { AmsError, isTransient } from './errors.js';
import type { Message, WsMessage } from './types.js';

/** Page size of the catch-up (the service's maximum). */
const SYNC_PAGE = 100;
/** A transient failure of room:sync (rate limit, a busy service) is tried again after this long. */
const SYNC_RETRY_MS = 1_000;

/** One WebSocket connection as the catch-up sees it. */
export interface SyncSource {
  /** False once the connection it stands for is gone (a newer one takes over). */
  active(): boolean;
  /** `room:sync`: the messages after `afterSeq`, oldest first. */
  sync(roomId: string, afterSeq: number, limit: number): Promise<{ messages: WsMessage[]; lastSeq: number; hasMore: boolean }>;
}

export const toRestMessage = (m: WsMessage): Message => {
  const { authorAgentId, ...rest } = m;
  return { ...rest, senderId: authorAgentId };
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Exactly once, in `seq` order, per room (docs/catch-up.md's recipe): the last
 * `seq` delivered per room; live `message:new` ahead of it is buffered (and a repeat dropped) while
 * `room:sync` fills the gap from the last `seq` delivered.
 */
export class RoomStreams {
  private readonly positions = new Map<string, number>();
  private readonly ahead = new Map<string, Map<number, WsMessage>>();
  /** The connection each running catch-up works on. */
  private readonly syncing = new Map<string, SyncSource>();

  constructor(
    initial: Record<string, number>,
    private readonly deliver: (message: Message) => void,
    private readonly onError: (err: unknown) => void,
  ) {
    for (const [roomId, seq] of Object.entries(initial)) this.positions.set(roomId, seq);
  }

  /** The last `seq` delivered per room: what to save and pass as `lastSeqs` to resume. */
  lastSeqs(): Record<string, number> {
    return Object.fromEntries(this.positions);
  }

  /**
   * A connection's `agent:hello-ack`, or a `room:positions` on it: a room seen for the first time
   * starts at its `lastSeq` (new messages only); one behind is caught up. Resolves when every catch-up it started has ended.
   */
  async connected(lastSeqs: Record<string, number>, source: SyncSource): Promise<void> {
    const started: Promise<void>[] = [];
    for (const [roomId, lastSeq] of Object.entries(lastSeqs)) {
      const position = this.positions.get(roomId);
      if (position === undefined) this.positions.set(roomId, lastSeq);
      else if (position < lastSeq || (this.ahead.get(roomId)?.size ?? 0) > 0) started.push(this.catchUp(roomId, source));
    }
    await Promise.all(started);
  }

  /** A live `message:new` on `source`. */
  live(message: WsMessage, source: SyncSource): void {
    const { roomId, seq } = message;
    let position = this.positions.get(roomId);
    if (position === undefined) {
      // A room joined while connected: it starts with this message.
      position = seq - 1;
      this.positions.set(roomId, position);
    }
    if (seq <= position) return;
    if (seq === position + 1 && !this.syncing.has(roomId)) {
      this.accept(message);
      this.drain(roomId);
      return;
    }
    let buffered = this.ahead.get(roomId);
    if (!buffered) this.ahead.set(roomId, (buffered = new Map()));
    buffered.set(seq, message);
    if (this.syncing.get(roomId) !== source) void this.catchUp(roomId, source);
  }

  private accept(message: WsMessage): void {
    if (message.seq !== (this.positions.get(message.roomId) ?? 0) + 1) return;
    this.positions.set(message.roomId, message.seq);
    this.deliver(toRestMessage(message));
  }

  /** Delivers the buffered messages that now follow on; forgets the ones already delivered. */
  private drain(roomId: string): void {
    const buffered = this.ahead.get(roomId);
    if (!buffered) return;
    for (;;) {
      const next = buffered.get((this.positions.get(roomId) ?? 0) + 1);
      if (!next) break;
      buffered.delete(next.seq);
      this.accept(next);
    }
    const position = this.positions.get(roomId) ?? 0;
    for (const seq of buffered.keys()) if (seq <= position) buffered.delete(seq);
    if (buffered.size === 0) this.ahead.delete(roomId);
  }

  private async catchUp(roomId: string, source: SyncSource): Promise<void> {
    if (this.syncing.get(roomId) === source) return;
    this.syncing.set(roomId, source);
    try {
      for (;;) {
        if (!source.active()) return;
        let page;
        try {
          page = await source.sync(roomId, this.positions.get(roomId) ?? 0, SYNC_PAGE);
        } catch (err) {
          // A connection that went away is replaced: the next hello-ack catches up again.
          if (!source.active()) return;
          if (isTransient(err)) {
            await sleep(SYNC_RETRY_MS);
            continue;
          }
          // Removed from the room, or it is gone: nothing more of it will come.
          this.ahead.delete(roomId);
          this.onError(err instanceof AmsError ? err : new AmsError('INTERNAL', String(err), { cause: err }));
          return;
        }
        if (this.syncing.get(roomId) !== source) return; // a newer connection took over
        for (const message of page.messages) this.accept(message);
        this.drain(roomId);
        const behind = (this.positions.get(roomId) ?? 0) < page.lastSeq;
        if (!page.hasMore && !behind && !this.ahead.has(roomId)) return;
        if (!page.hasMore && page.messages.length === 0 && !this.ahead.has(roomId)) return;
      }
    } finally {
      if (this.syncing.get(roomId) === source) this.syncing.delete(roomId);
    }
  }
}
