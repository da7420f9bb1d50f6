import type { Namespace, Socket } from 'socket.io';
import type { Message } from '../core/messages/message.js';
import type { Principal } from '../core/principal.js';
import type { WsErrorCode } from '../errors.js';

/**
 * The wire protocol of the `/agents` namespace (SPEC.md "Events", DESIGN.md section 3): event names,
 * payload shapes and the Socket.IO room names the server uses internally.
 */

export const NAMESPACE = '/agents';

/** Client-to-server events the namespace handles. Anything else is answered with VALIDATION_ERROR. */
export const CLIENT_EVENTS = ['room:join', 'room:leave', 'room:list', 'message:send', 'message:history', 'room:sync', 'room:read'] as const;
export type ClientEventName = (typeof CLIENT_EVENTS)[number];

/**
 * What the server sends back to a client, in the acknowledgement (`{error: {code, message}}`) or as
 * an `error` event (`{code, message, requestId?}`): exactly the shapes of DESIGN.md, nothing more.
 */
export interface WsError {
  code: WsErrorCode;
  /** Human-readable; for VALIDATION_ERROR it names each failing field. */
  message: string;
  /** Echoes the request's `requestId` on `error` events. */
  requestId?: string;
}

/** A message as WebSocket payloads carry it: the author is `authorAgentId` (REST says `senderId`). */
export interface WsMessage {
  id: string;
  roomId: string;
  authorAgentId: string;
  body: string;
  createdAt: string;
  seq: number;
  mentions?: string[];
  replyTo?: string;
  clientMsgId?: string;
}

export interface PresenceUpdate {
  agentId: string;
  status: 'online' | 'offline';
}

export interface HelloAck {
  agentId: string;
  rooms: string[];
  /** `{roomId: lastSeq}` for every room in `rooms`, read after the socket joined them. */
  lastSeqs: Record<string, number>;
}

export interface ServerToClientEvents {
  'agent:hello-ack': (payload: HelloAck) => void;
  'presence:update': (payload: PresenceUpdate) => void;
  'message:new': (payload: WsMessage) => void;
  error: (payload: WsError) => void;
}

/** Client payloads are untrusted: every handler receives `unknown` and validates it. */
export type ClientToServerEvents = Record<string, (...args: unknown[]) => void>;

/** Nodes talk through the cluster bus (src/cluster/bus.ts), not through Socket.IO's server-side events. */
export type InterServerEvents = Record<string, never>;

/** Kept small: with the Redis adapter it travels to other nodes on fetchSockets. */
export interface SocketData {
  principal: Principal;
}

export function toWsMessage(message: Message): WsMessage {
  const out: WsMessage = {
    id: message.id,
    roomId: message.roomId,
    authorAgentId: message.senderId,
    body: message.body,
    createdAt: message.createdAt,
    seq: message.seq,
  };
  if (message.mentions !== undefined) out.mentions = message.mentions;
  if (message.replyTo !== undefined) out.replyTo = message.replyTo;
  if (message.clientMsgId !== undefined) out.clientMsgId = message.clientMsgId;
  return out;
}

/** Socket.IO room names. Room ids and agent ids are lowercase UUIDs, so the names cannot collide. */
export const ROOM_PREFIX = 'room:';
export const roomChannel = (roomId: string): string => `${ROOM_PREFIX}${roomId}`;
export const agentChannel = (agentId: string): string => `agent:${agentId}`;
export const tokenChannel = (tokenId: string): string => `token:${tokenId}`;

export type AgentsNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
export type AgentSocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
