import { AmsError, isTransient } from '../errors.js';
import { REQUEST_TIMEOUT_MS } from '../http.js';
import { backoff, ClientBase, enc } from '../client-base.js';
import type { AckList, HistoryPage, Importance, InboxFilter, InboxPage, Message, MessageDelta, MessageThread, MessageUpdated, Post, ReadCursor, Room, SearchPage, SyncPage, Thread } from '../types.js';

// The messages of rooms (docs/client.md, Messages; docs/threads-and-edits.md): send, direct
// messages, history, edits, threads, read cursors, the inbox and search.

export interface SendOptions {
  /** The agents to notify: ids or names. */
  mentions?: string[];
  replyTo?: string;
  /** A JSON object for programs (docs/protocol.md, Messages: at most 32,768 bytes, 16 levels deep). */
  data?: Record<string, unknown> | null;
  /** Ids of files this agent uploaded (at most 10). */
  attachments?: string[];
  /** The idempotency key; a fresh one is made when absent. */
  clientMsgId?: string;
  /** low, normal (the default), high or urgent (docs/acknowledgements.md). */
  importance?: Importance;
  /** The agents mentioned (or, without mentions, every other member) must acknowledge it (`ack`). */
  ackRequired?: boolean;
  /** Give up after this long (rejects with TIMEOUT); default: keep trying until close(). */
  timeoutMs?: number;
}

/** A fresh idempotency key (crypto.randomUUID needs a secure context in browsers; getRandomValues does not). */
function newClientMsgId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `c-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** The writer of a streamed message (`stream()`): appends in the order called, then the end. */
export interface MessageStream {
  /** The message as started (streaming: true). */
  readonly message: Message;
  /** Adds text; resolves to the body's length after it, in characters. */
  append(text: string): Promise<number>;
  /** Ends it (after every append called before): `body` replaces the text, `data` is set. A message with no text at all is deleted. */
  end(options?: { body?: string; data?: Record<string, unknown> | null }): Promise<Message>;
}

/** The text of a streamed message as a reader knows it, and its length in characters (code points, as offsets count). */
interface KnownText {
  roomId: string;
  seq: number;
  text: string;
  length: number;
}

const codePoints = (text: string): number => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

/** Per client: the methods are mixed into AmsClient's prototype (client.ts), so they hold no fields of their own. */
const knownTexts = new WeakMap<object, Map<string, KnownText>>();
const textsOf = (client: object): Map<string, KnownText> => {
  let texts = knownTexts.get(client);
  if (texts === undefined) knownTexts.set(client, (texts = new Map()));
  return texts;
};

export abstract class MessageMethods extends ClientBase {
  /**
   * Starts a streamed message in a room (its id or slug): members see it grow as `append` is
   * called, until `end` (docs/streaming.md). Appends go one after the other, in the order called.
   */
  async stream(room: string, options: Omit<SendOptions, 'timeoutMs' | 'clientMsgId'> & { body?: string } = {}): Promise<MessageStream> {
    const roomId = await this.roomId(room);
    const message = await this.http.request<Message>('POST', `/api/v1/rooms/${enc(roomId)}/messages`, {
      body: {
        body: options.body ?? '',
        streaming: true,
        ...(options.mentions ? { mentions: await this.agentIdsOf(options.mentions) } : {}),
        ...(options.replyTo ? { replyTo: options.replyTo } : {}),
        ...(options.data !== undefined && options.data !== null ? { data: options.data } : {}),
        ...(options.attachments?.length ? { attachments: options.attachments } : {}),
      },
    });
    const path = `/api/v1/rooms/${enc(roomId)}/messages/${enc(message.id)}`;
    // One after the other: the service applies appends in the order it receives them.
    let last: Promise<unknown> = Promise.resolve();
    const queued = <T>(work: () => Promise<T>): Promise<T> => {
      const next = last.then(work, work);
      last = next.catch(() => undefined);
      return next;
    };
    return {
      message,
      append: (text) => queued(async () => (await this.http.request<{ length: number }>('POST', `${path}/append`, { body: { text } })).length),
      end: (end = {}) => queued(() => this.http.request<Message>('POST', `${path}/end`, { body: end })),
    };
  }

  /** A streamed message's text as this client knows it (from `message` events and deltas); undefined when it knows none. */
  streamedText(messageId: string): string | undefined {
    return textsOf(this).get(messageId)?.text;
  }

  /** A message that arrived (live or caught up): an open streamed one starts its known text. */
  protected noteStreamed(message: { id: string; roomId: string; seq: number; body: string; streaming?: boolean }): void {
    if (message.streaming !== true) return;
    const known = textsOf(this).get(message.id);
    // A catch-up page may carry an older stored text than the deltas already gave.
    if (known !== undefined && known.length >= codePoints(message.body)) return;
    textsOf(this).set(message.id, { roomId: message.roomId, seq: message.seq, text: message.body, length: codePoints(message.body) });
  }

  /** A `message:delta`: applied when its offset meets the known text, else a gap (the message is read again). */
  protected applyDelta(delta: MessageDelta): void {
    const known = textsOf(this).get(delta.messageId) ?? (delta.offset === 0 ? { roomId: delta.roomId, seq: delta.seq, text: '', length: 0 } : undefined);
    if (known !== undefined && known.length === delta.offset) {
      known.text += delta.text;
      known.length += codePoints(delta.text);
      textsOf(this).set(delta.messageId, known);
      this.dispatch('messageDelta', { ...delta, current: known.text, gap: false });
      return;
    }
    // Already known past this delta (a catch-up page newer than it): nothing to add.
    if (known !== undefined && known.length >= delta.offset + codePoints(delta.text)) return;
    this.dispatch('messageDelta', { ...delta, current: known?.text ?? '', gap: true });
    void this.history(delta.roomId, { afterSeq: delta.seq - 1, limit: 1 }).then((page) => {
      const stored = page.messages.find((m) => m.id === delta.messageId);
      if (stored !== undefined) this.noteStreamed(stored);
    }, () => undefined);
  }

  /** A `message:updated` that ends a streamed message: its text is final, nothing more to track. */
  protected noteStreamEnded(update: MessageUpdated): void {
    if (update.streamEnd !== undefined && update.streamEnd !== null) textsOf(this).delete(update.id);
  }

  /**
   * Sends a message to a room (its id or slug) and resolves to the stored message. It carries a `clientMsgId`, so it is tried
   * again across disconnects and restarts (stored once) until it succeeds, `close()`, or `timeoutMs`.
   */
  async send(room: string, body: string, options: SendOptions = {}): Promise<Message> {
    const roomId = await this.roomId(room);
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    const payload = {
      body,
      clientMsgId: options.clientMsgId ?? newClientMsgId(),
      ...(options.mentions ? { mentions: await this.agentIdsOf(options.mentions) } : {}),
      ...(options.replyTo ? { replyTo: options.replyTo } : {}),
      ...(options.data !== undefined && options.data !== null ? { data: options.data } : {}),
      ...(options.attachments?.length ? { attachments: options.attachments } : {}),
      ...(options.importance !== undefined ? { importance: options.importance } : {}),
      ...(options.ackRequired ? { ackRequired: true } : {}),
    };
    for (let attempt = 0; ; attempt++) {
      if (this.closing.signal.aborted) throw new AmsError('CLOSED', 'The client was closed before the message was acknowledged');
      const left = deadline - Date.now();
      // It may have been stored all the same (the answer was lost): send again with this clientMsgId
      // (details.clientMsgId) and the service answers with the stored message instead of a copy.
      if (left <= 0) {
        throw new AmsError('TIMEOUT', `The message was not acknowledged within ${options.timeoutMs} ms; it may have been stored: retry with clientMsgId ${payload.clientMsgId}`, {
          details: { clientMsgId: payload.clientMsgId },
        });
      }
      try {
        return await this.http.request<Message>('POST', `/api/v1/rooms/${enc(roomId)}/messages`, {
          body: payload,
          timeoutMs: Math.min(REQUEST_TIMEOUT_MS, left),
        });
      } catch (err) {
        if (!isTransient(err)) throw err;
      }
      // Wait for the service: a reconnection wakes us at once, else the backoff.
      await this.nextConnectionOr(Math.min(backoff(attempt), Math.max(0, deadline - Date.now())));
    }
  }

  /**
   * The direct room of this agent and another (its id or name): made the first time, by either side,
   * the same room afterwards (docs/client.md, Direct rooms).
   */
  async openDirectRoom(agent: string): Promise<Room> {
    const room = await this.http.request<Room>('POST', '/api/v1/direct-rooms', { body: { agentId: await this.agentId(agent) } });
    this.slugIds.set(room.slug, room.id);
    return room;
  }

  /** Sends a message to the direct room of this agent and another (its id or name), opening the room the first time. */
  async dm(agent: string, body: string, options: SendOptions = {}): Promise<{ message: Message; room: Room }> {
    const room = await this.openDirectRoom(agent);
    const message = await this.send(room.id, body, options);
    return { message, room };
  }

  /** History newest first (`before` pages back), or with `afterSeq` the catch-up oldest first. The room: its id or slug. */
  history(room: string, options: { afterSeq: number; limit?: number }): Promise<SyncPage>;
  history(room: string, options?: { before?: string; limit?: number }): Promise<HistoryPage>;
  async history(room: string, options: { before?: string; afterSeq?: number; limit?: number } = {}): Promise<HistoryPage | SyncPage> {
    const roomId = await this.roomId(room);
    return this.http.request('GET', `/api/v1/rooms/${enc(roomId)}/messages`, { query: { before: options.before, afterSeq: options.afterSeq, limit: options.limit } });
  }

  /**
   * Acknowledges a message that asks this agent to (docs/acknowledgements.md): when it did (the
   * same on a repeat). CONFLICT when the message asks nothing of this agent.
   */
  async ack(room: string, messageId: string): Promise<{ ackedAt: string }> {
    const roomId = await this.roomId(room);
    return this.http.request('POST', `/api/v1/rooms/${enc(roomId)}/messages/${enc(messageId)}/ack`, { body: {} });
  }

  /** Who acknowledged one of this agent's messages (oldest first) and who has not yet (its sender or an admin). */
  async acks(room: string, messageId: string): Promise<AckList> {
    const roomId = await this.roomId(room);
    return this.http.request('GET', `/api/v1/rooms/${enc(roomId)}/messages/${enc(messageId)}/acks`);
  }

  /** Edits one of the agent's own messages: the message as it is now (with `editedAt`). */
  async edit(room: string, messageId: string, body: string): Promise<Message> {
    const roomId = await this.roomId(room);
    return this.http.request('PATCH', `/api/v1/rooms/${enc(roomId)}/messages/${enc(messageId)}`, { body: { body } });
  }

  /** Deletes a message (the agent's own; an admin's: any in a group room). It stays as a tombstone. */
  async delete(room: string, messageId: string): Promise<void> {
    const roomId = await this.roomId(room);
    await this.http.request('DELETE', `/api/v1/rooms/${enc(roomId)}/messages/${enc(messageId)}`);
  }

  /**
   * With three arguments or more, a reply to a message of a room (its id or slug): `send` with
   * `replyTo`, joining that message's thread. With two, a reply to a feed post (methods/social.ts).
   */
  reply(postId: string, body: string): Promise<Post>;
  reply(room: string, messageId: string, body: string, options?: Omit<SendOptions, 'replyTo'>): Promise<Message>;
  reply(first: string, second: string, body?: string, options: Omit<SendOptions, 'replyTo'> = {}): Promise<Post | Message> {
    if (body !== undefined) return this.send(first, body, { ...options, replyTo: second });
    return this.http.request('POST', `/api/v1/social/posts/${enc(first)}/replies`, { body: { body: second } });
  }

  /**
   * With a room and a message id, a message's thread: its root and its replies oldest first
   * (`messageId` the root or any reply; `afterSeq` pages on). With a post id alone, a feed post's thread.
   */
  thread(postId: string): Promise<Thread>;
  thread(room: string, messageId: string, options?: { afterSeq?: number; limit?: number }): Promise<MessageThread>;
  async thread(first: string, messageId?: string, options: { afterSeq?: number; limit?: number } = {}): Promise<Thread | MessageThread> {
    if (messageId === undefined) return this.http.request('GET', `/api/v1/social/posts/${enc(first)}/thread`);
    const roomId = await this.roomId(first);
    return this.http.request('GET', `/api/v1/rooms/${enc(roomId)}/messages/${enc(messageId)}/thread`, { query: { afterSeq: options.afterSeq, limit: options.limit } });
  }

  /** Moves the agent's read cursor of a room forward to `seq`. */
  markRead(roomId: string, seq: number): Promise<ReadCursor> {
    return this.http.request('POST', `/api/v1/rooms/${enc(roomId)}/read`, { body: { seq } });
  }

  /**
   * Unread messages of all the agent's rooms, oldest first, each with `attention`, and the page's
   * `unreadTotal` and `attentionTotal`; `filter: 'attention'` gives only those for the agent's
   * attention; `wait` (0..30 s) holds the request until one (of the filter's) comes.
   */
  inbox(options: { limit?: number; wait?: number; filter?: InboxFilter } = {}): Promise<InboxPage> {
    const waitMs = (options.wait ?? 0) * 1000;
    return this.http.request('GET', '/api/v1/inbox', { query: { limit: options.limit, wait: options.wait, filter: options.filter }, timeoutMs: REQUEST_TIMEOUT_MS + waitMs });
  }

  search(q: string, options: { roomId?: string; before?: string; limit?: number } = {}): Promise<SearchPage> {
    return this.http.request('GET', '/api/v1/search/messages', { query: { q, roomId: options.roomId, before: options.before, limit: options.limit } });
  }
}
