import { io } from 'socket.io-client';
import { AmsError } from './errors.js';
import { backoff, ClientBase, RECONNECT_MAX_MS, RECONNECT_MIN_MS, type AmsClientOptions } from './client-base.js';
import { RoomStreams, type SyncSource } from './room-streams.js';
import { AgentMethods } from './methods/agents.js';
import { FileMethods } from './methods/files.js';
import { MessageMethods } from './methods/messages.js';
import { RoomMethods } from './methods/rooms.js';
import { SocialMethods } from './methods/social.js';
import { TaskMethods } from './methods/tasks.js';
import { WebhookMethods } from './methods/webhooks.js';
import type { ActivityUpdate, HelloAck, LeaseUpdated, MessageAcked, MessageDeleted, MessageDelta, MessageUpdated, PresenceUpdate, Room, Task, WsError, WsMessage } from './types.js';
import { LeaseMethods } from './methods/leases.js';

export type { AmsClientEvents, AmsClientOptions } from './client-base.js';
export type { MessageStream, SendOptions } from './methods/messages.js';

/**
 * A client of the Agent Messaging Service for Node.js and browsers (docs/client.md).
 * REST goes through global `fetch`, events through Socket.IO; the API token is exchanged for a JWT that
 * is renewed before `exp`, and reconnections use the fresh one.
 *
 * This file is the connection's life (connect, reconnect, exactly-once delivery, close). The methods
 * are written by domain, one file each under `methods/` (messages, rooms, tasks, files, webhooks,
 * agents, social), over what they share (`client-base.ts`), and become AmsClient's own below.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the methods of methods/*.ts (the end of this file)
export class AmsClient extends ClientBase {
  private readonly streams: RoomStreams;
  /** Counts connections, so that work begun on one stops once another replaced it. */
  private connection = 0;
  private reconnectAttempts = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: AmsClientOptions) {
    super(options);
    // Live or caught up, an open streamed message starts the text its deltas extend.
    this.streams = new RoomStreams(options.lastSeqs ?? {}, (m) => {
      this.noteStreamed(m);
      this.dispatch('message', m);
    }, (err) => this.report(err));
  }

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
    socket.on('message:updated', (update: MessageUpdated) => {
      this.noteStreamEnded(update);
      this.dispatch('messageUpdated', update);
    });
    socket.on('message:delta', (delta: MessageDelta) => this.applyDelta(delta));
    socket.on('message:deleted', (deletion: MessageDeleted) => this.dispatch('messageDeleted', deletion));
    socket.on('activity:update', (update: ActivityUpdate) => this.dispatch('activityUpdate', update));
    socket.on('room:added', (event: { room: Room }) => {
      this.slugIds.set(event.room.slug, event.room.id);
      this.dispatch('roomAdded', event);
    });
    socket.on('room:removed', (event: { roomId: string }) => this.dispatch('roomRemoved', event));
    socket.on('task:updated', (event: { task: Task }) => this.dispatch('taskUpdated', event));
    socket.on('message:acked', (event: MessageAcked) => this.dispatch('messageAcked', event));
    socket.on('lease:updated', (event: LeaseUpdated) => this.dispatch('leaseUpdated', event));
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

  private currentSource(): SyncSource {
    const connection = this.connection;
    return {
      active: () => this.connection === connection && (this.socket?.connected ?? false),
      sync: (roomId, afterSeq, limit) => this.request('room:sync', { roomId, afterSeq, limit }),
    };
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
}

/** The domains' methods, in one list: each is a class over ClientBase whose methods AmsClient takes as its own. */
const DOMAINS = [MessageMethods, RoomMethods, TaskMethods, LeaseMethods, FileMethods, WebhookMethods, AgentMethods, SocialMethods] as const;

// TypeScript's documented way of writing one class's methods in several files (a class and an
// interface of one name merge): the interface gives AmsClient the domains' methods as types, the
// loop puts them on its prototype, refusing a name written twice (test/unit/client-methods.test.ts
// checks that none is missed).
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the merge is the point (see above)
export interface AmsClient extends MessageMethods, RoomMethods, TaskMethods, LeaseMethods, FileMethods, WebhookMethods, AgentMethods, SocialMethods {}
for (const domain of DOMAINS) {
  for (const name of Object.getOwnPropertyNames(domain.prototype)) {
    if (name === 'constructor') continue;
    if (name in AmsClient.prototype) throw new Error(`AmsClient.${name} is written twice (client.ts, client-base.ts or methods/)`);
    Object.defineProperty(AmsClient.prototype, name, Object.getOwnPropertyDescriptor(domain.prototype, name)!);
  }
}
