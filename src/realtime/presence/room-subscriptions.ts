import { roomChannel, type AgentsNamespace, type AgentSocket, type PresenceUpdate } from '../protocol.js';
import type { PresenceTracker } from '../../presence/presence-tracker.js';

/** The one place `presence:update` is sent from: to everyone subscribed to the room. */
export function announcePresence(nsp: AgentsNamespace, roomId: string, agentId: string, status: PresenceUpdate['status']): void {
  nsp.to(roomChannel(roomId)).emit('presence:update', { agentId, status });
}

/**
 * Room subscriptions and the presence they imply, in one place. Socket.IO rooms carry the
 * broadcasts (`room:<id>`, and `agent:<id>` to reach all sockets of an agent); the PresenceTracker
 * decides when `presence:update` goes out (first socket of the agent in a room: online; last one
 * out: offline), and announcePresence sends it. Membership changes move the sockets on every node
 * through the cluster bus (cluster/membership-sync.ts) before the presence part here runs.
 */
export interface Subscriptions {
  /**
   * A newly authenticated socket's presence in the agent's rooms, registered (nothing joined or
   * announced yet): how many live sockets the agent has now, and the rooms where this is its first.
   * The connection (realtime/connection/connection.ts) then applies its limit and either `withdraw`s
   * the socket or `subscribe`s it, sends `agent:hello-ack`, and calls `announceOnline`.
   */
  register(socket: AgentSocket, roomIds: readonly string[]): Promise<{ connections: number; firstInRooms: readonly string[] }>;
  /** A registered socket that was refused: its presence removed, nothing announced. */
  withdraw(socket: AgentSocket): Promise<void>;
  /** Puts a registered socket in its rooms' channels: a message sent from now on reaches it. */
  subscribe(socket: AgentSocket, roomIds: readonly string[]): void;
  /** `presence:update` online in the rooms where the socket was its agent's first. */
  announceOnline(socket: AgentSocket, firstInRooms: readonly string[]): void;
  /** After a socket disconnected: offline where it was the agent's last socket. */
  disconnect(socket: AgentSocket): Promise<void>;
  /** `room:join`: subscribes the socket; online only when the agent had no socket in the room before (docs/websocket.md). */
  join(socket: AgentSocket, roomId: string): Promise<void>;
  /** `room:leave`: unsubscribes the socket; offline when it was the agent's last socket there. */
  leave(socket: AgentSocket, roomId: string): Promise<void>;
  /** A membership was added (its sockets already joined on every node): online when the agent is newly present. */
  membershipAdded(agentId: string, roomId: string): Promise<void>;
  /** A membership was removed (its sockets already left on every node): offline when the agent was present. */
  membershipRemoved(agentId: string, roomId: string): Promise<void>;
}

/** `offline`: the agent's last socket in those rooms went (its activity there becomes `idle`). */
export function createSubscriptions(nsp: AgentsNamespace, presence: PresenceTracker, offline: (agentId: string, roomIds: string[]) => void = () => undefined): Subscriptions {
  const announce = (roomId: string, agentId: string, status: PresenceUpdate['status']): void => announcePresence(nsp, roomId, agentId, status);

  return {
    async register(socket, roomIds) {
      return presence.connect(socket.data.principal.agentId, socket.id, roomIds);
    },

    async withdraw(socket) {
      await presence.disconnect(socket.data.principal.agentId, socket.id);
    },

    subscribe(socket, roomIds) {
      socket.join(roomIds.map(roomChannel));
    },

    announceOnline(socket, firstInRooms) {
      for (const roomId of firstInRooms) announce(roomId, socket.data.principal.agentId, 'online');
    },

    async disconnect(socket) {
      const { agentId } = socket.data.principal;
      const gone = await presence.disconnect(agentId, socket.id);
      for (const roomId of gone) announce(roomId, agentId, 'offline');
      offline(agentId, gone);
    },

    async join(socket, roomId) {
      const { agentId } = socket.data.principal;
      // The socket may have gone while membership was checked; joining now would leak it into the room.
      if (!socket.connected) return;
      socket.join(roomChannel(roomId));
      // A repeat, or a join while another socket of the agent is in the room, announces nothing.
      if (await presence.join(agentId, socket.id, roomId)) announce(roomId, agentId, 'online');
    },

    async leave(socket, roomId) {
      const { agentId } = socket.data.principal;
      socket.leave(roomChannel(roomId));
      if (await presence.leave(agentId, socket.id, roomId)) announce(roomId, agentId, 'offline');
    },

    async membershipAdded(agentId, roomId) {
      if (await presence.joinAllSockets(agentId, roomId)) announce(roomId, agentId, 'online');
    },

    async membershipRemoved(agentId, roomId) {
      if (await presence.leaveAllSockets(agentId, roomId)) announce(roomId, agentId, 'offline');
    },
  };
}
