import { io, type Socket } from 'socket.io-client';

/**
 * STAND-IN for `agent-messaging-service/client` (PHASE2.md section 3), which is being written on the
 * branch `client`: the same names and shapes, only what the console uses. When that library is
 * merged this file becomes a re-export of it (the console imports AmsClient and AmsError from here
 * only).
 */

export type Role = 'admin' | 'agent';

export interface Message {
  id: string;
  roomId: string;
  senderId: string;
  body: string;
  createdAt: string;
  seq: number;
}

export interface Room {
  id: string;
  slug: string;
  name: string;
  createdBy: string;
  createdAt: string;
  lastSeq: number;
  readSeq?: number;
  unreadCount?: number;
}

export interface RoomMember {
  agentId: string;
  name: string;
  displayName: string;
  role: Role;
  joinedAt: string;
  online: boolean;
}

export interface Agent {
  id: string;
  name: string;
  displayName: string;
  role: Role;
  createdAt: string;
}

export interface DirectoryEntry {
  id: string;
  name: string;
  displayName: string;
  role: Role;
  online: boolean;
}

export interface Channel {
  id: string;
  slug: string;
  name: string;
  createdAt: string;
}

export interface Post {
  id: string;
  channelId: string;
  authorAgentId: string;
  body: string;
  parentPostId: string | null;
  replyCount: number;
  createdAt: string;
}

export interface PostPage {
  posts: Post[];
  nextCursor: string | null;
  hasMore: boolean;
}

export interface ReactionCount {
  emoji: string;
  count: number;
  reactedByMe: boolean;
}

export interface IssuedToken {
  id: string;
  token: string;
  prefix: string;
  createdAt: string;
}

export interface PresenceUpdate {
  agentId: string;
  status: 'online' | 'offline';
}

export type ConnectionState = 'connected' | 'reconnecting' | 'closed';

export class AmsError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'AmsError';
  }
}

interface Events {
  message: Message;
  presence: PresenceUpdate;
  state: ConnectionState;
}

interface WsMessage extends Omit<Message, 'senderId'> {
  authorAgentId: string;
}

interface SyncAck {
  messages?: WsMessage[];
  lastSeq?: number;
  hasMore?: boolean;
  error?: { code: string; message: string };
}

const CODE_OF_STATUS: Record<number, string> = { 400: 'VALIDATION_ERROR', 401: 'UNAUTHENTICATED', 403: 'FORBIDDEN', 404: 'NOT_FOUND', 409: 'CONFLICT', 429: 'RATE_LIMIT_EXCEEDED' };
/** Renew this long before `exp` (PHASE2 section 5: at least 60 s). */
const RENEW_BEFORE_MS = 90_000;

const fromWs = ({ authorAgentId, ...rest }: WsMessage): Message => ({ ...rest, senderId: authorAgentId });

/** The JWT's claims (SPEC.md "Session JWT"); read, not verified: the server verifies. */
function claimsOf(jwt: string): { agentId: string; role: Role; exp: number } {
  const payload = jwt.split('.')[1] ?? '';
  return JSON.parse(atob(payload.replace(/-/g, '+').replace(/_/g, '/'))) as { agentId: string; role: Role; exp: number };
}

export class AmsClient {
  readonly url: string;
  private readonly apiToken: string;
  private jwt = '';
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private socket: Socket | undefined;
  private readonly listeners: { [K in keyof Events]: Set<(value: Events[K]) => void> } = { message: new Set(), presence: new Set(), state: new Set() };
  /** The last seq delivered per room: catch-up starts there after a reconnect. */
  private readonly seen = new Map<string, number>();
  private readonly syncing = new Map<string, Promise<void>>();
  agentId = '';
  role: Role = 'agent';

  constructor(options: { url: string; apiToken: string }) {
    this.url = options.url.replace(/\/$/, '');
    this.apiToken = options.apiToken;
  }

  on<K extends keyof Events>(event: K, fn: (value: Events[K]) => void): () => void {
    this.listeners[event].add(fn);
    return () => this.listeners[event].delete(fn);
  }

  private emit<K extends keyof Events>(event: K, value: Events[K]): void {
    for (const fn of this.listeners[event]) fn(value);
  }

  async connect(): Promise<void> {
    await this.renew();
    const socket = io(`${this.url}/agents`, { transports: ['websocket'], auth: (cb) => cb({ token: this.jwt }) });
    this.socket = socket;
    await new Promise<void>((resolve, reject) => {
      socket.once('connect_error', (err) => reject(new AmsError(err.message, 'AUTH_FAILED')));
      socket.on('agent:hello-ack', (ack: { rooms: string[]; lastSeqs: Record<string, number> }) => {
        for (const [roomId, lastSeq] of Object.entries(ack.lastSeqs)) {
          if (!this.seen.has(roomId)) this.seen.set(roomId, lastSeq);
          else if (lastSeq > (this.seen.get(roomId) ?? 0)) void this.sync(roomId);
        }
        this.emit('state', 'connected');
        resolve();
      });
    });
    socket.on('disconnect', () => this.emit('state', this.socket ? 'reconnecting' : 'closed'));
    socket.on('presence:update', (update: PresenceUpdate) => this.emit('presence', update));
    socket.on('message:new', (ws: WsMessage) => {
      const last = this.seen.get(ws.roomId) ?? ws.seq - 1;
      if (ws.seq <= last) return;
      if (ws.seq === last + 1 && !this.syncing.has(ws.roomId)) this.deliver(fromWs(ws));
      else void this.sync(ws.roomId);
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.renewTimer);
    const socket = this.socket;
    this.socket = undefined;
    socket?.close();
    this.emit('state', 'closed');
  }

  private deliver(message: Message): void {
    this.seen.set(message.roomId, message.seq);
    this.emit('message', message);
  }

  /** Fetches what this client missed in a room (room:sync), in seq order, once at a time per room. */
  private sync(roomId: string): Promise<void> {
    const running = this.syncing.get(roomId);
    if (running) return running.then(() => this.sync(roomId));
    const run = (async () => {
      for (;;) {
        const afterSeq = this.seen.get(roomId) ?? 0;
        const ack = await new Promise<SyncAck>((resolve) => this.socket?.timeout(10_000).emit('room:sync', { roomId, afterSeq }, (err: Error | null, value: SyncAck) => resolve(err ? { error: { code: 'TIMEOUT', message: err.message } } : value)));
        if (ack.error || !ack.messages) return;
        for (const ws of ack.messages) if (ws.seq > (this.seen.get(roomId) ?? 0)) this.deliver(fromWs(ws));
        if (!ack.hasMore) return;
      }
    })().finally(() => this.syncing.delete(roomId));
    this.syncing.set(roomId, run);
    return run;
  }

  /** Exchanges the API token for a JWT and schedules the next exchange before `exp`. */
  private async renew(): Promise<void> {
    const session = await this.request<{ token: string }>('POST', '/api/v1/sessions', undefined, this.apiToken);
    this.jwt = session.token;
    const claims = claimsOf(this.jwt);
    this.agentId = claims.agentId;
    this.role = claims.role;
    clearTimeout(this.renewTimer);
    const inMs = Math.max(claims.exp * 1000 - Date.now() - RENEW_BEFORE_MS, 5_000);
    this.renewTimer = setTimeout(() => void this.renew().catch(() => undefined), inMs);
  }

  private async request<T>(method: string, path: string, body?: unknown, bearer = this.jwt): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new AmsError(err instanceof Error ? err.message : 'network error', 'NETWORK_ERROR');
    }
    const text = await response.text();
    const parsed: unknown = text === '' ? undefined : JSON.parse(text);
    if (!response.ok) {
      const message = (parsed as { error?: string } | undefined)?.error ?? response.statusText;
      throw new AmsError(message, CODE_OF_STATUS[response.status] ?? 'INTERNAL', response.status);
    }
    return parsed as T;
  }

  async send(roomId: string, body: string): Promise<Message> {
    return this.request('POST', `/api/v1/rooms/${roomId}/messages`, { body, clientMsgId: crypto.randomUUID() });
  }

  async history(roomId: string, options: { before?: string; limit?: number } = {}): Promise<{ messages: Message[]; hasMore: boolean; nextCursor: string | null }> {
    const query = new URLSearchParams();
    if (options.before) query.set('cursor', options.before);
    if (options.limit) query.set('limit', String(options.limit));
    return this.request('GET', `/api/v1/rooms/${roomId}/messages?${query}`);
  }

  markRead = (roomId: string, seq: number): Promise<{ roomId: string; readSeq: number; unreadCount: number }> =>
    this.request('POST', `/api/v1/rooms/${roomId}/read`, { seq });
  rooms = async (): Promise<Room[]> => (await this.request<{ rooms: Room[] }>('GET', '/api/v1/rooms')).rooms;
  members = async (roomId: string): Promise<RoomMember[]> => (await this.request<{ members: RoomMember[] }>('GET', `/api/v1/rooms/${roomId}/members`)).members;
  createRoom = (input: { slug: string; name: string; members?: string[] }): Promise<Room> => this.request('POST', '/rooms', input);
  addMember = (roomId: string, agentId: string): Promise<unknown> => this.request('POST', `/rooms/${roomId}/members`, { agentId });
  removeMember = (roomId: string, agentId: string): Promise<unknown> => this.request('DELETE', `/rooms/${roomId}/members/${agentId}`);
  channels = async (): Promise<Channel[]> => (await this.request<{ channels: Channel[] }>('GET', '/api/v1/social/channels')).channels;
  feed = (options: { channelId?: string; before?: string } = {}): Promise<PostPage> => {
    const query = options.before ? `?before=${options.before}` : '';
    return this.request('GET', options.channelId ? `/api/v1/social/channels/${options.channelId}/posts${query}` : `/api/v1/social/feed${query}`);
  };
  post = (channelId: string, body: string): Promise<Post> => this.request('POST', `/api/v1/social/channels/${channelId}/posts`, { body });
  thread = (postId: string): Promise<{ parent: Post; replies: Post[] }> => this.request('GET', `/api/v1/social/posts/${postId}/thread`);
  reply = (postId: string, body: string): Promise<Post> => this.request('POST', `/api/v1/social/posts/${postId}/replies`, { body });
  react = (postId: string, emoji: string): Promise<{ action: 'added' | 'removed'; emoji: string }> => this.request('POST', `/api/v1/social/posts/${postId}/reactions`, { emoji });
  reactions = async (postId: string): Promise<ReactionCount[]> => (await this.request<{ reactions: ReactionCount[] }>('GET', `/api/v1/social/posts/${postId}/reactions`)).reactions;
  directory = async (companyId: string): Promise<DirectoryEntry[]> => (await this.request<{ agents: DirectoryEntry[] }>('GET', `/api/companies/${encodeURIComponent(companyId)}/agents/directory`)).agents;
  agents = (): Promise<Agent[]> => this.request('GET', '/api/v1/agents');
  createAgent = (input: { name: string; displayName: string; role: Role }): Promise<Agent> => this.request('POST', '/api/v1/agents', input);
  issueToken = (agentId: string): Promise<IssuedToken> => this.request('POST', `/api/v1/agents/${agentId}/tokens`, { scopes: {} });
  revokeToken = (prefix: string): Promise<void> => this.request('DELETE', `/api/v1/tokens/${encodeURIComponent(prefix)}`);
}
