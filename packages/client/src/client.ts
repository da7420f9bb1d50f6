import { io, type Socket } from 'socket.io-client';
import { AmsError, isTransient } from './errors.js';
import { HttpTransport, REQUEST_TIMEOUT_MS } from './http.js';
import { RoomStreams, type SyncSource } from './room-streams.js';
import { SessionKeeper } from './session.js';
import type {
  Agent, Channel, CreatedWebhook, Directory, HelloAck, HistoryPage, InboxFilter, InboxPage, IssuedToken, IssueTokenOptions, Membership, Message, NewAgent, NewChannel,
  NewRoom, Post, PostPage, PresenceUpdate, ReactionList, ReadCursor, Room, RoomMember, SearchPage, Session, SyncPage, Thread, ToggleResult, TokenSummary,
  NewWebhook, Webhook, WebhookDelivery, WsError, WsMessage, WsRequestName, WsRequests, MessageThread, MessageUpdated, MessageDeleted,
  AuditPage, AuditQuery, AgentUpdate,
} from './types.js';

export interface AmsClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** The agent's API token `agt_...`; exchanged for session JWTs. */
  apiToken: string;
  /** A position saved from `lastSeqs()`: delivery resumes after it. Rooms not in it start at their `lastSeq`. */
  lastSeqs?: Record<string, number>;
  /** The deployment's COMPANY_ID, for `directory()` ("default"). */
  companyId?: string;
  /** How long a WebSocket request waits for its acknowledgement (10 s). */
  ackTimeoutMs?: number;
}

export interface SendOptions {
  mentions?: string[];
  replyTo?: string;
  /** The idempotency key; a fresh one is made when absent. */
  clientMsgId?: string;
  /** Give up after this long (rejects with TIMEOUT); default: keep trying until close(). */
  timeoutMs?: number;
}

/** What `on(...)` can listen to. */
export interface AmsClientEvents {
  /** Every message of the agent's rooms, its own included: exactly once, in seq order per room. */
  message: (message: Message) => void;
  'presence:update': (update: PresenceUpdate) => void;
  /** A message of the agent's rooms was edited (live only: catch-up gives messages as they are now). */
  messageUpdated: (update: MessageUpdated) => void;
  /** A message of the agent's rooms was deleted: it stays as a tombstone (body ""). */
  messageDeleted: (deletion: MessageDeleted) => void;
  /** The agent became a member of a room while connected (a direct room opened by either side, an admin adding it); already subscribed. */
  roomAdded: (event: { room: Room }) => void;
  /** The agent stopped being a member of a room; already unsubscribed. */
  roomRemoved: (event: { roomId: string }) => void;
  /** Each (re)connection, once its `agent:hello-ack` arrived. */
  connect: (hello: HelloAck) => void;
  /** The WebSocket went away (the client reconnects by itself unless close() was called). */
  disconnect: (reason: string) => void;
  /** Failures nobody awaits: the `error` events of the service, refused renewals, listeners that threw. */
  error: (error: AmsError) => void;
}
type EventName = keyof AmsClientEvents;

const ACK_TIMEOUT_MS = 10_000;
/** Reconnection backoff, for Socket.IO's own reconnects and for ours after a server disconnect. */
const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5_000;
/** 250 ms doubling to 5 s. */
const backoff = (attempt: number): number => Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt, 5));

/** A fresh idempotency key (crypto.randomUUID needs a secure context in browsers; getRandomValues does not). */
function newClientMsgId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `c-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

const enc = encodeURIComponent;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A client of the Agent Messaging Service for Node.js and browsers (docs/client.md).
 * REST goes through global `fetch`, events through Socket.IO; the API token is exchanged for a JWT that
 * is renewed before `exp`, and reconnections use the fresh one.
 */
export class AmsClient {
  private readonly url: string;
  private readonly apiToken: string;
  private readonly companyId: string;
  private readonly ackTimeoutMs: number;
  private readonly session: SessionKeeper;
  private readonly http: HttpTransport;
  private readonly streams: RoomStreams;
  private readonly listeners = new Map<EventName, Set<unknown>>();
  private readonly closing = new AbortController();
  /** Room slugs seen by `roomId()`, with their ids. */
  private readonly slugIds = new Map<string, string>();
  private socket: Socket | null = null;
  /** Counts connections, so that work begun on one stops once another replaced it. */
  private connection = 0;
  private reconnectAttempts = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  /** Woken on every hello-ack: sends waiting for the service try again at once. */
  private connectedWaiters: (() => void)[] = [];

  constructor(options: AmsClientOptions) {
    if (typeof options?.url !== 'string' || options.url === '') throw new AmsError('VALIDATION_ERROR', 'AmsClient needs {url}');
    if (typeof options.apiToken !== 'string' || options.apiToken === '') throw new AmsError('VALIDATION_ERROR', 'AmsClient needs {apiToken}');
    this.url = options.url.replace(/\/+$/, '');
    this.apiToken = options.apiToken;
    this.companyId = options.companyId ?? 'default';
    this.ackTimeoutMs = options.ackTimeoutMs ?? ACK_TIMEOUT_MS;
    this.session = new SessionKeeper(() => this.createSession(), (err) => this.report(err));
    this.http = new HttpTransport(this.url, this.session, this.closing.signal);
    this.streams = new RoomStreams(options.lastSeqs ?? {}, (m) => this.dispatch('message', m), (err) => this.report(err));
  }

  // ------------------------------------------------------------------ lifecycle

  /**
   * Opens the WebSocket and resolves once the first `agent:hello-ack` arrived and the rooms behind a
   * saved position were caught up. Rejects when the API token is refused or the service cannot be reached.
   */
  async connect(): Promise<void> {
    if (this.closing.signal.aborted) throw new AmsError('CLOSED', 'The client was closed');
    if (this.socket) throw new AmsError('VALIDATION_ERROR', 'connect() was called already');
    await this.session.token();
    const socket = io(`${this.url}/agents`, {
      transports: ['websocket'],
      // A function, so that every (re)connection presents the current JWT, renewed when due.
      auth: (cb) => {
        this.session.token().then((token) => cb({ token }), () => cb({}));
      },
      reconnectionDelay: RECONNECT_MIN_MS,
      reconnectionDelayMax: RECONNECT_MAX_MS,
      timeout: this.ackTimeoutMs,
    });
    this.socket = socket;
    let firstReady: { resolve: () => void; reject: (err: AmsError) => void } | null = null;
    const ready = new Promise<void>((resolve, reject) => (firstReady = { resolve, reject }));
    const failFirst = (err: AmsError): void => {
      if (!firstReady) return;
      firstReady.reject(err);
      firstReady = null;
      this.stopSocket();
    };
    this.closing.signal.addEventListener('abort', () => failFirst(new AmsError('CLOSED', 'The client was closed while connecting')), { once: true });

    // Messages that come before this connection's hello-ack wait for it (the positions start there).
    let early: WsMessage[] | null = [];
    socket.on('connect', () => {
      this.connection += 1;
      early = [];
    });
    socket.on('message:new', (message: WsMessage) => {
      if (early) early.push(message);
      else this.streams.live(message, this.currentSource());
    });
    socket.on('agent:hello-ack', (hello: HelloAck) => {
      this.reconnectAttempts = 0;
      const source = this.currentSource();
      const caughtUp = this.streams.connected(hello.lastSeqs, source);
      const queued = early ?? [];
      early = null;
      for (const message of queued) this.streams.live(message, source);
      this.dispatch('connect', hello);
      for (const wake of this.connectedWaiters.splice(0)) wake();
      void caughtUp.then(() => {
        firstReady?.resolve();
        firstReady = null;
      });
    });
    // The service's position check (docs/catch-up.md): a room whose lastSeq is ahead of what was
    // delivered missed a broadcast, caught up like after a reconnection. Before the hello-ack the
    // positions start there anyway.
    socket.on('room:positions', (positions: { lastSeqs: Record<string, number> }) => {
      if (early !== null) return;
      void this.streams.connected(positions.lastSeqs, this.currentSource());
    });
    socket.on('presence:update', (update: PresenceUpdate) => this.dispatch('presence:update', update));
    socket.on('message:updated', (update: MessageUpdated) => this.dispatch('messageUpdated', update));
    socket.on('message:deleted', (deletion: MessageDeleted) => this.dispatch('messageDeleted', deletion));
    socket.on('room:added', (event: { room: Room }) => {
      this.slugIds.set(event.room.slug, event.room.id);
      this.dispatch('roomAdded', event);
    });
    socket.on('room:removed', (event: { roomId: string }) => this.dispatch('roomRemoved', event));
    socket.on('error', (error: WsError) => {
      const err = new AmsError(error.code, error.message);
      // A refused JWT (expired, or the service's secret changed): the reconnection exchanges anew.
      if (error.code === 'AUTH_FAILED') this.session.invalidate();
      this.report(err);
      if (error.code === 'AUTH_FAILED' && firstReady) {
        // Only the API token itself being refused ends connect(); a stale JWT is retried.
        this.session.token().then(() => undefined, (exchangeError: unknown) => failFirst(exchangeError instanceof AmsError ? exchangeError : err));
      }
    });
    socket.on('connect_error', (err: Error) => {
      if (firstReady) return failFirst(new AmsError('NETWORK_ERROR', `Cannot connect to ${this.url}: ${err.message}`, { cause: err }));
      // Refused by a middleware (an Origin not allowed): Socket.IO does not retry on its own.
      if (!socket.active) this.scheduleReconnect();
    });
    socket.on('disconnect', (reason: string) => {
      this.connection += 1;
      early = [];
      this.dispatch('disconnect', reason);
      // The service closed it (shutting down, or the JWT refused): reconnect by ourselves.
      if (reason === 'io server disconnect' && !this.closing.signal.aborted) this.scheduleReconnect();
    });
    await ready;
  }

  /** Closes the WebSocket, stops renewing, and makes every pending call reject with CLOSED. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort();
    this.session.stop();
    clearTimeout(this.reconnectTimer);
    this.stopSocket();
    for (const wake of this.connectedWaiters.splice(0)) wake();
  }

  /** The last seq delivered per room: save it and pass it as `lastSeqs` to resume after a restart. */
  lastSeqs(): Record<string, number> {
    return this.streams.lastSeqs();
  }

  /** Whether the WebSocket is connected now. */
  get connected(): boolean {
    return this.socket?.connected ?? false;
  }

  on<E extends EventName>(event: E, listener: AmsClientEvents[E]): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => this.off(event, listener);
  }

  off<E extends EventName>(event: E, listener: AmsClientEvents[E]): void {
    this.listeners.get(event)?.delete(listener);
  }

  // ------------------------------------------------------------------ messages

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
      ...(options.mentions ? { mentions: options.mentions } : {}),
      ...(options.replyTo ? { replyTo: options.replyTo } : {}),
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
   * The direct room of this agent and another (its id): made the first time, by either side, the
   * same room afterwards (docs/client.md, Direct rooms).
   */
  openDirectRoom(agentId: string): Promise<Room> {
    return this.http.request('POST', '/api/v1/direct-rooms', { body: { agentId } });
  }

  /** Sends a message to the direct room of this agent and another (its id or name), opening the room the first time. */
  async dm(agent: string, body: string, options: SendOptions = {}): Promise<{ message: Message; room: Room }> {
    const room = await this.openDirectRoom(await this.agentId(agent));
    this.slugIds.set(room.slug, room.id);
    const message = await this.send(room.id, body, options);
    return { message, room };
  }

  /** An agent's id from its id or name (names looked up in the directory). NOT_FOUND for an unknown name. */
  private async agentId(ref: string): Promise<string> {
    if (UUID.test(ref)) return ref.toLowerCase();
    const wanted = ref.toLowerCase();
    const found = (await this.directory()).agents.find((a) => a.name.toLowerCase() === wanted);
    if (!found) throw new AmsError('NOT_FOUND', `Agent "${ref}" not found`, { status: 404 });
    return found.id;
  }

  /** History newest first (`before` pages back), or with `afterSeq` the catch-up oldest first. The room: its id or slug. */
  history(room: string, options: { afterSeq: number; limit?: number }): Promise<SyncPage>;
  history(room: string, options?: { before?: string; limit?: number }): Promise<HistoryPage>;
  async history(room: string, options: { before?: string; afterSeq?: number; limit?: number } = {}): Promise<HistoryPage | SyncPage> {
    const roomId = await this.roomId(room);
    return this.http.request('GET', `/api/v1/rooms/${enc(roomId)}/messages`, { query: { before: options.before, afterSeq: options.afterSeq, limit: options.limit } });
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
   * A room's id from its id or slug, as the CLI and the MCP tools take them: a slug is looked up in
   * `rooms()` once (slugs do not change), an id is used as it is. ROOM_NOT_FOUND for an unknown slug.
   */
  private async roomId(ref: string): Promise<string> {
    if (UUID.test(ref)) return ref.toLowerCase();
    let id = this.slugIds.get(ref);
    if (id === undefined) {
      for (const r of await this.rooms()) this.slugIds.set(r.slug, r.id);
      id = this.slugIds.get(ref);
      if (id === undefined) throw new AmsError('ROOM_NOT_FOUND', `Room "${ref}" not found`, { status: 404 });
    }
    return id;
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

  /** Moves the agent's read cursor of a room forward to `seq`. */
  markRead(roomId: string, seq: number): Promise<ReadCursor> {
    return this.http.request('POST', `/api/v1/rooms/${enc(roomId)}/read`, { body: { seq } });
  }

  search(q: string, options: { roomId?: string; before?: string; limit?: number } = {}): Promise<SearchPage> {
    return this.http.request('GET', '/api/v1/search/messages', { query: { q, roomId: options.roomId, before: options.before, limit: options.limit } });
  }

  // ------------------------------------------------------------------ rooms

  /** The rooms the agent sees (strict mode: its own; admins: all), with its read state in its rooms. */
  async rooms(): Promise<Room[]> {
    return (await this.http.request<{ rooms: Room[] }>('GET', '/api/v1/rooms')).rooms;
  }

  /** Creates a room (admin); the agent becomes a member, and so do `members`. */
  createRoom(room: NewRoom): Promise<Room> {
    return this.http.request('POST', '/rooms', { body: room });
  }

  addMember(roomId: string, agentId: string): Promise<Membership> {
    return this.http.request('POST', `/rooms/${enc(roomId)}/members`, { body: { agentId } });
  }

  async removeMember(roomId: string, agentId: string): Promise<void> {
    await this.http.request('DELETE', `/rooms/${enc(roomId)}/members/${enc(agentId)}`);
  }

  /** The members of a room, with whether each is online. */
  async members(roomId: string): Promise<RoomMember[]> {
    return (await this.http.request<{ members: RoomMember[] }>('GET', `/api/v1/rooms/${enc(roomId)}/members`)).members;
  }

  // ------------------------------------------------------------------ webhooks (the agent's own, or any as an admin)

  /** `POST /api/v1/agents/:id/webhooks`: keep the returned `secret`, it is shown only here. */
  createWebhook(agentId: string, input: NewWebhook): Promise<CreatedWebhook> {
    return this.http.request('POST', `/api/v1/agents/${enc(agentId)}/webhooks`, { body: input });
  }

  async webhooks(agentId: string): Promise<Webhook[]> {
    return (await this.http.request<{ webhooks: Webhook[] }>('GET', `/api/v1/agents/${enc(agentId)}/webhooks`)).webhooks;
  }

  async deleteWebhook(agentId: string, webhookId: string): Promise<void> {
    await this.http.request('DELETE', `/api/v1/agents/${enc(agentId)}/webhooks/${enc(webhookId)}`);
  }

  /** The deliveries of one endpoint, newest first. */
  async webhookDeliveries(agentId: string, webhookId: string, options: { limit?: number } = {}): Promise<WebhookDelivery[]> {
    const path = `/api/v1/agents/${enc(agentId)}/webhooks/${enc(webhookId)}/deliveries`;
    return (await this.http.request<{ deliveries: WebhookDelivery[] }>('GET', path, { query: { limit: options.limit } })).deliveries;
  }

  // ------------------------------------------------------------------ agents, tokens, sessions, directory

  agents(): Promise<Agent[]> {
    return this.http.request('GET', '/api/v1/agents');
  }

  createAgent(agent: NewAgent): Promise<Agent> {
    return this.http.request('POST', '/api/v1/agents', { body: agent });
  }

  /** Changes an agent's display name, description or skills (the agent itself, or an admin). */
  updateAgent(agentId: string, changes: AgentUpdate): Promise<Agent> {
    return this.http.request('PATCH', `/api/v1/agents/${enc(agentId)}`, { body: changes });
  }

  disableAgent(agentId: string): Promise<Agent> {
    return this.http.request('POST', `/api/v1/agents/${enc(agentId)}/disable`);
  }

  enableAgent(agentId: string): Promise<Agent> {
    return this.http.request('POST', `/api/v1/agents/${enc(agentId)}/enable`);
  }

  /** A new API token for an agent (shown once, in the answer). */
  issueToken(agentId: string, options: IssueTokenOptions = {}): Promise<IssuedToken> {
    return this.http.request('POST', `/api/v1/agents/${enc(agentId)}/tokens`, { body: options });
  }

  /** An agent's API tokens, revoked ones included, oldest first, without secrets (admin). */
  async tokens(agentId: string): Promise<TokenSummary[]> {
    const { tokens } = await this.http.request<{ tokens: TokenSummary[] }>('GET', `/api/v1/agents/${enc(agentId)}/tokens`);
    return tokens;
  }

  /** Revokes an API token by its prefix `agt_<12 hex>`. */
  async revokeToken(prefix: string): Promise<void> {
    await this.http.request('DELETE', `/api/v1/tokens/${enc(prefix)}`);
  }

  /** `POST /api/v1/sessions`: exchanges an API token (this client's by default) for a new session JWT. */
  createSession(apiToken: string = this.apiToken): Promise<Session> {
    return this.http.request('POST', '/api/v1/sessions', { body: { apiToken }, auth: false });
  }

  /** The current session JWT (renewed when due), e.g. for a request this client has no method for. */
  jwt(): Promise<string> {
    return this.session.token();
  }

  /** The agents of the company, with whether each is online. */
  directory(options: { role?: 'admin' | 'agent' } = {}): Promise<Directory> {
    return this.http.request('GET', `/api/companies/${enc(this.companyId)}/agents/directory`, { query: { role: options.role } });
  }

  /**
   * A page of the audit log (admins; a scoped token needs `admin`), newest first: filtered by
   * `event`, `actorId` and `subjectId`; pass the page's `nextCursor` as `before` for the next.
   */
  audit(options: AuditQuery = {}): Promise<AuditPage> {
    const { event, actorId, subjectId, before, limit } = options;
    return this.http.request('GET', '/api/v1/audit', { query: { event, actorId, subjectId, before, limit } });
  }

  // ------------------------------------------------------------------ social feed

  async channels(): Promise<Channel[]> {
    return (await this.http.request<{ channels: Channel[] }>('GET', '/api/v1/social/channels')).channels;
  }

  createChannel(channel: NewChannel): Promise<Channel> {
    return this.http.request('POST', '/api/v1/social/channels', { body: channel });
  }

  /** Top-level posts of every channel, or of one with `channelId`, newest first. */
  feed(options: { channelId?: string; before?: string; limit?: number } = {}): Promise<PostPage> {
    const path = options.channelId === undefined ? '/api/v1/social/feed' : `/api/v1/social/channels/${enc(options.channelId)}/posts`;
    return this.http.request('GET', path, { query: { before: options.before, limit: options.limit } });
  }

  post(channelId: string, body: string): Promise<Post> {
    return this.http.request('POST', `/api/v1/social/channels/${enc(channelId)}/posts`, { body: { body } });
  }

  /**
   * With three arguments or more, a reply to a message of a room (its id or slug): `send` with
   * `replyTo`, joining that message's thread. With two, a reply to a feed post.
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

  /** Toggles the agent's reaction (👍, 🤔 or 💡) on a post. */
  react(postId: string, emoji: string): Promise<ToggleResult> {
    return this.http.request('POST', `/api/v1/social/posts/${enc(postId)}/reactions`, { body: { emoji } });
  }

  reactions(postId: string): Promise<ReactionList> {
    return this.http.request('GET', `/api/v1/social/posts/${enc(postId)}/reactions`);
  }

  // ------------------------------------------------------------------ WebSocket requests

  /**
   * Any client event of the `/agents` namespace with its acknowledgement, typed (`room:join`,
   * `room:list`, `room:sync`, `message:history`, ...). Rejects with NOT_CONNECTED while disconnected.
   */
  async request<E extends WsRequestName>(event: E, payload: WsRequests[E]['payload']): Promise<WsRequests[E]['ack']> {
    const socket = this.socket;
    if (!socket?.connected) throw new AmsError('NOT_CONNECTED', `${event}: the WebSocket is not connected`);
    let ack: unknown;
    try {
      ack = await socket.timeout(this.ackTimeoutMs).emitWithAck(event, payload);
    } catch (err) {
      throw new AmsError(socket.connected ? 'TIMEOUT' : 'NOT_CONNECTED', `${event}: no acknowledgement`, { cause: err });
    }
    const failure = (ack as { error?: { code: string; message: string } } | null)?.error;
    if (failure) throw new AmsError(failure.code, failure.message);
    return ack as WsRequests[E]['ack'];
  }

  // ------------------------------------------------------------------ internals

  private currentSource(): SyncSource {
    const connection = this.connection;
    return {
      active: () => this.connection === connection && (this.socket?.connected ?? false),
      sync: (roomId, afterSeq, limit) => this.request('room:sync', { roomId, afterSeq, limit }),
    };
  }

  /**
   * close() wakes every waiter too; no listener on the closing signal per waiter (fifty concurrent
   * sends would trip Node's MaxListenersExceededWarning).
   */
  private nextConnectionOr(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.connectedWaiters = this.connectedWaiters.filter((w) => w !== wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.connectedWaiters.push(wake);
    });
  }

  private scheduleReconnect(): void {
    clearTimeout(this.reconnectTimer);
    const delay = backoff(this.reconnectAttempts++);
    this.reconnectTimer = setTimeout(() => {
      if (!this.closing.signal.aborted && this.socket && !this.socket.connected) this.socket.connect();
    }, delay * (0.5 + Math.random() / 2));
  }

  private stopSocket(): void {
    const socket = this.socket;
    if (!socket) return;
    socket.removeAllListeners();
    socket.disconnect();
    if (!this.closing.signal.aborted) this.socket = null;
  }

  private dispatch<E extends EventName>(event: E, ...args: Parameters<AmsClientEvents[E]>): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) {
      try {
        (listener as (...a: Parameters<AmsClientEvents[E]>) => void)(...args);
      } catch (err) {
        if (event === 'error') continue;
        this.report(new AmsError('HANDLER_ERROR', `A "${event}" listener threw: ${String(err)}`, { cause: err }));
      }
    }
  }

  private report(err: unknown): void {
    const error = err instanceof AmsError ? err : new AmsError('INTERNAL', String(err), { cause: err });
    if ((this.listeners.get('error')?.size ?? 0) === 0) return; // nobody listens: await-ed calls still reject
    this.dispatch('error', error);
  }
}
