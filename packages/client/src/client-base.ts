import type { Socket } from 'socket.io-client';
import { AmsError } from './errors.js';
import { HttpTransport } from './http.js';
import { SessionKeeper } from './session.js';
import type { ActivityUpdate, HelloAck, LeaseUpdated, Message, MessageAcked, MessageDeleted, MessageDelta, MessageUpdated, PresenceUpdate, Room, Session, Task, WsRequestName, WsRequests } from './types.js';

export interface AmsClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** The agent's API token `agt_...`; exchanged for session JWTs. */
  apiToken: string;
  /** A position saved from `lastSeqs()`: delivery resumes after it. Rooms not in it start at their `lastSeq`. */
  lastSeqs?: Record<string, number>;
  /** The deployment's COMPANY_ID, for `directory()` and agent names ("default"). */
  companyId?: string;
  /** How long a WebSocket request waits for its acknowledgement (10 s). */
  ackTimeoutMs?: number;
}

/** What `on(...)` can listen to. */
export interface AmsClientEvents {
  /** Every message of the agent's rooms, its own included: exactly once, in seq order per room. */
  message: (message: Message) => void;
  'presence:update': (update: PresenceUpdate) => void;
  /** A message of the agent's rooms was edited (live only: catch-up gives messages as they are now). */
  messageUpdated: (update: MessageUpdated) => void;
  /**
   * Text appended to an open streamed message of the agent's rooms (docs/streaming.md), in order:
   * `current` is the message's text as this client knows it after the delta; `gap` is true when a
   * delta was missed (its offset is past the known text): the client reads the message again and
   * `streamedText` has the stored text once it came.
   */
  messageDelta: (delta: MessageDelta & { current: string; gap: boolean }) => void;
  /** A message of the agent's rooms was deleted: it stays as a tombstone (body ""). */
  messageDeleted: (deletion: MessageDeleted) => void;
  /** A member of one of the agent's rooms is typing, working or idle again (at most one per agent and room a second; live only). */
  activityUpdate: (update: ActivityUpdate) => void;
  /** The agent became a member of a room while connected (a direct room opened by either side, an admin adding it); already subscribed. */
  roomAdded: (event: { room: Room }) => void;
  /** The agent stopped being a member of a room; already unsubscribed. */
  roomRemoved: (event: { roomId: string }) => void;
  /** A task the agent requested or is assigned was created or moved (docs/tasks.md), on any node. */
  taskUpdated: (event: { task: Task }) => void;
  /** An agent acknowledged a message this agent sent (docs/acknowledgements.md), on any node. */
  messageAcked: (event: MessageAcked) => void;
  /** A lease in one of the agent's rooms was granted, renewed, released or ran out (docs/leases.md), on any node. */
  leaseUpdated: (event: LeaseUpdated) => void;
  /** Each (re)connection, once its `agent:hello-ack` arrived. */
  connect: (hello: HelloAck) => void;
  /** The WebSocket went away (the client reconnects by itself unless close() was called). */
  disconnect: (reason: string) => void;
  /** Failures nobody awaits: the `error` events of the service, refused renewals, listeners that threw. */
  error: (error: AmsError) => void;
}
export type EventName = keyof AmsClientEvents;

const ACK_TIMEOUT_MS = 10_000;
/** Reconnection backoff, for Socket.IO's own reconnects and for ours after a server disconnect; sends wait as long between tries. */
export const RECONNECT_MIN_MS = 250;
export const RECONNECT_MAX_MS = 5_000;
/** 250 ms doubling to 5 s. */
export const backoff = (attempt: number): number => Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt, 5));

export const enc = encodeURIComponent;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What every part of `AmsClient` shares: the REST transport and the session JWT, the WebSocket and
 * its acknowledged requests, the listeners, and the resolution of a room's slug and an agent's name
 * to their ids. The methods are written by domain (`methods/messages.ts`, `methods/rooms.ts`, ...,
 * each over this class); the connection's life is `client.ts`, which puts them together.
 */
export abstract class ClientBase {
  protected readonly url: string;
  protected readonly apiToken: string;
  protected readonly companyId: string;
  protected readonly ackTimeoutMs: number;
  protected readonly session: SessionKeeper;
  protected readonly http: HttpTransport;
  protected readonly closing = new AbortController();
  protected readonly listeners = new Map<EventName, Set<unknown>>();
  /** Room slugs seen by `roomId()` (and direct rooms opened), with their ids: a slug never changes. */
  protected readonly slugIds = new Map<string, string>();
  /** Agent names (lower case) seen by `agentId()`, with their ids: a name never changes, an agent is never deleted. */
  protected readonly agentIds = new Map<string, string>();
  protected socket: Socket | null = null;
  /** Woken on every hello-ack: sends waiting for the service try again at once. */
  protected connectedWaiters: (() => void)[] = [];

  constructor(options: AmsClientOptions) {
    if (typeof options?.url !== 'string' || options.url === '') throw new AmsError('VALIDATION_ERROR', 'AmsClient needs {url}');
    if (typeof options.apiToken !== 'string' || options.apiToken === '') throw new AmsError('VALIDATION_ERROR', 'AmsClient needs {apiToken}');
    this.url = options.url.replace(/\/+$/, '');
    this.apiToken = options.apiToken;
    this.companyId = options.companyId ?? 'default';
    this.ackTimeoutMs = options.ackTimeoutMs ?? ACK_TIMEOUT_MS;
    this.session = new SessionKeeper(() => this.createSession(), (err) => this.report(err));
    this.http = new HttpTransport(this.url, this.session, this.closing.signal);
  }

  // ------------------------------------------------------------------ the session

  /** `POST /api/v1/sessions`: exchanges an API token (this client's by default) for a new session JWT. */
  createSession(apiToken: string = this.apiToken): Promise<Session> {
    return this.http.request('POST', '/api/v1/sessions', { body: { apiToken }, auth: false });
  }

  /** The current session JWT (renewed when due), e.g. for a request this client has no method for. */
  jwt(): Promise<string> {
    return this.session.token();
  }

  // ------------------------------------------------------------------ listeners

  on<E extends EventName>(event: E, listener: AmsClientEvents[E]): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(listener);
    return () => this.off(event, listener);
  }

  off<E extends EventName>(event: E, listener: AmsClientEvents[E]): void {
    this.listeners.get(event)?.delete(listener);
  }

  protected dispatch<E extends EventName>(event: E, ...args: Parameters<AmsClientEvents[E]>): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) {
      try {
        (listener as (...a: Parameters<AmsClientEvents[E]>) => void)(...args);
      } catch (err) {
        if (event === 'error') continue;
        this.report(new AmsError('HANDLER_ERROR', `A "${event}" listener threw: ${String(err)}`, { cause: err }));
      }
    }
  }

  protected report(err: unknown): void {
    const error = err instanceof AmsError ? err : new AmsError('INTERNAL', String(err), { cause: err });
    if ((this.listeners.get('error')?.size ?? 0) === 0) return; // nobody listens: await-ed calls still reject
    this.dispatch('error', error);
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

  /**
   * Resolves after `ms`, or at once when a connection's hello-ack arrives or close() is called.
   * close() wakes every waiter too; no listener on the closing signal per waiter (fifty concurrent
   * sends would trip Node's MaxListenersExceededWarning).
   */
  protected nextConnectionOr(ms: number): Promise<void> {
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

  // ------------------------------------------------------------------ names

  /**
   * A room's id from its id or slug, as the CLI and the MCP tools take them: a slug is looked up in
   * `rooms()` once (slugs do not change), an id is used as it is. ROOM_NOT_FOUND for an unknown slug.
   */
  protected async roomId(ref: string): Promise<string> {
    if (UUID.test(ref)) return ref.toLowerCase();
    let id = this.slugIds.get(ref);
    if (id === undefined) {
      const { rooms } = await this.http.request<{ rooms: { id: string; slug: string }[] }>('GET', '/api/v1/rooms');
      for (const r of rooms) this.slugIds.set(r.slug, r.id);
      id = this.slugIds.get(ref);
      if (id === undefined) throw new AmsError('ROOM_NOT_FOUND', `Room "${ref}" not found`, { status: 404 });
    }
    return id;
  }

  /**
   * An agent's id from its id or its name, as `dm`, the MCP tools and `ams` take them: an id is used
   * as it is; a name (any case, as the service compares them) is looked up in the directory, once
   * (names never change). NOT_FOUND for an unknown name.
   */
  protected async agentId(ref: string): Promise<string> {
    if (UUID.test(ref)) return ref.toLowerCase();
    const wanted = ref.toLowerCase();
    let id = this.agentIds.get(wanted);
    if (id === undefined) {
      const path = `/api/companies/${enc(this.companyId)}/agents/directory`;
      const { agents } = await this.http.request<{ agents: { id: string; name: string }[] }>('GET', path);
      for (const a of agents) this.agentIds.set(a.name.toLowerCase(), a.id);
      id = this.agentIds.get(wanted);
      if (id === undefined) throw new AmsError('NOT_FOUND', `agent "${ref}" not found`, { status: 404 });
    }
    return id;
  }

  /** `agentId` of each, looking the directory up once at most. */
  protected async agentIdsOf(refs: readonly string[]): Promise<string[]> {
    const ids: string[] = [];
    for (const ref of refs) ids.push(await this.agentId(ref));
    return ids;
  }
}
