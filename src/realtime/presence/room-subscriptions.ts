import { roomChannel, type AgentsNamespace, type AgentSocket, type PresenceUpdate } from '../protocol.js';
import type { PresenceTracker } from './presence-tracker.js';

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
   * Subscribes a newly authenticated socket to the agent's rooms, sends it `agent:hello-ack`, and
   * announces the agent online where this is its first socket. Refuses (false: nothing joined, sent
   * or announced) beyond `maxConnections` live sockets of the agent. The hello's `lastSeqs` are read
   * (`readLastSeqs`) once the socket is in its rooms: a message numbered above them reaches the
   * socket as `message:new`, so a client that catches up to `lastSeqs` misses nothing.
   */
  connect(
    socket: AgentSocket,
    roomIds: readonly string[],
    maxConnections: number,
    readLastSeqs: (roomIds: readonly string[]) => Promise<Record<string, number>>,
  ): Promise<boolean>;
  /** After a socket disconnected: offline where it was the agent's last socket. */
  disconnect(socket: AgentSocket): Promise<void>;
  /** `room:join`: subscribes the socket; online only when the agent had no socket in the room before (DESIGN.md). */
  join(socket: AgentSocket, roomId: string): Promise<void>;
  /** `room:leave`: unsubscribes the socket; offline when it was the agent's last socket there. */
  leave(socket: AgentSocket, roomId: string): Promise<void>;
  /** A membership was added (its sockets already joined on every node): online when the agent is newly present. */
  membershipAdded(agentId: string, roomId: string): Promise<void>;
  /** A membership was removed (its sockets already left on every node): offline when the agent was present. */
  membershipRemoved(agentId: string, roomId: string): Promise<void>;
}

export function createSubscriptions(nsp: AgentsNamespace, presence: PresenceTracker): Subscriptions {
  const announce = (roomId: string, agentId: string, status: PresenceUpdate['status']): void => announcePresence(nsp, roomId, agentId, status);

  return {
    async connect(socket, roomIds, maxConnections, readLastSeqs) {
      const { agentId } = socket.data.principal;
      const { connections, firstInRooms } = await presence.connect(agentId, socket.id, roomIds);
      if (connections > maxConnections || !socket.connected) {
        await presence.disconnect(agentId, socket.id);
        return false;
      }
      socket.join(roomIds.map(roomChannel));
      const known = await readLastSeqs(roomIds);
      const lastSeqs: Record<string, number> = {};
      for (const roomId of roomIds) lastSeqs[roomId] = known[roomId] ?? 0;
      socket.emit('agent:hello-ack', { agentId, rooms: [...roomIds], lastSeqs });
      socket.data.subscribed = true; // from now on the position check keeps its rooms right (position-check.ts)
      for (const roomId of firstInRooms) announce(roomId, agentId, 'online');
      return true;
    },

    async disconnect(socket) {
      const { agentId } = socket.data.principal;
      for (const roomId of await presence.disconnect(agentId, socket.id)) announce(roomId, agentId, 'offline');
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
