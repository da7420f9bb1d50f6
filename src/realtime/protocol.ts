import type { Namespace, Socket } from 'socket.io';
import type { ServerToClientEvents, WsMessage } from '@agent-messaging/protocol';
import type { Message } from '../core/messages/message.js';
import type { Principal } from '../core/principal.js';

/**
 * The server's side of the wire protocol (the shapes themselves are the protocol package's, shared
 * with clients): the socket types, the message as sockets carry it, and the Socket.IO room names.
 */

export {
  NAMESPACE, CLIENT_EVENTS, REQUEST_ID_MAX, type ClientEventName, type WsError, type WsMessage, type PresenceUpdate, type HelloAck, type RoomPositions,
  type ServerToClientEvents,
} from '@agent-messaging/protocol';

/** Client payloads are untrusted: every handler receives `unknown` and validates it. */
export type ClientToServerEvents = Record<string, (...args: unknown[]) => void>;

/** Nodes talk through the cluster bus (src/cluster/bus.ts), not through Socket.IO's server-side events. */
export type InterServerEvents = Record<string, never>;

/** Kept small: with the Redis adapter it travels to other nodes on fetchSockets. */
export interface SocketData {
  principal: Principal;
  /** Set once the socket's setup subscribed it to its rooms: the position check leaves it alone before. */
  subscribed?: boolean;
  /** Rooms this socket left with `room:leave`: the position check does not subscribe it again. */
  leftRooms?: Set<string>;
  /**
   * The positions this socket was last told (its `agent:hello-ack`'s `lastSeqs`, then each
   * `room:positions`): a periodic position check sends it only what differs (position-check.ts).
   */
  toldPositions?: Record<string, number>;
}

export function toWsMessage(message: Message): WsMessage {
  const out: WsMessage = {
    id: message.id,
    roomId: message.roomId,
    authorAgentId: message.senderId,
    body: message.body,
    createdAt: message.createdAt,
    seq: message.seq,
    threadId: message.threadId,
    editedAt: message.editedAt,
    deletedAt: message.deletedAt,
    data: message.data,
    attachments: message.attachments,
    task: message.task,
    streaming: message.streaming,
    streamEnd: message.streamEnd,
    importance: message.importance,
    ack: message.ack,
  };
  if (message.replyCount !== undefined) out.replyCount = message.replyCount;
  if (message.lastReplyAt !== undefined) out.lastReplyAt = message.lastReplyAt;
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
/**
 * Scoped tokens' sockets (docs/scopes.md) are not in `agentChannel`, which follows every membership
 * of the agent: they are in `scopedAgentChannel` (to end them with the agent), and follow only
 * what their token reaches: `agentChannel` when it grants messages:read in every room,
 * `roomGrantChannel` per granted room otherwise.
 */
export const scopedAgentChannel = (agentId: string): string => `agent-scoped:${agentId}`;
export const roomGrantChannel = (agentId: string, roomId: string): string => `agent:${agentId}:room:${roomId}`;
/**
 * `task:updated` follows the token's `tasks:read` and rooms (docs/scopes.md). Unscoped sockets get it
 * through `agentChannel`; scoped ones join these instead, so no unscoped socket pays a channel more:
 * `scopedTasksChannel` (tasks:read in every room, where the socket is not in `agentChannel`),
 * `scopedTasksRoomChannel` per granted room, and `noTasksChannel` (in `agentChannel` without
 * tasks:read: left out of the emit).
 */
export const scopedTasksChannel = (agentId: string): string => `agent-tasks:${agentId}`;
export const scopedTasksRoomChannel = (agentId: string, roomId: string): string => `agent-tasks:${agentId}:room:${roomId}`;
export const noTasksChannel = (agentId: string): string => `agent-no-tasks:${agentId}`;
/** The sockets of an agent that a membership of the room moves in or out. */
export const membershipFollowers = (agentId: string, roomId: string): string[] => [agentChannel(agentId), roomGrantChannel(agentId, roomId)];

export type AgentsNamespace = Namespace<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
export type AgentSocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
