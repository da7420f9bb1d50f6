import type { PresenceReader } from './presence.js';

/** A live socket of this node, as the realtime layer knows it (Socket.IO's own room membership). */
export interface LocalSocket {
  agentId: string;
  socketId: string;
  roomIds: string[];
}

/** What a shared tracker needs from the realtime layer for the work it does on its own. */
export interface PresenceHooks {
  /** This node's authenticated live sockets, to register them again when the shared state was lost. */
  localSockets(): LocalSocket[];
  /**
   * Presence changed without a socket event on this node: another node died and its sockets were
   * swept (offline), or this node's sockets were registered again (online). Sent to the room.
   */
  announce(agentId: string, roomId: string, status: 'online' | 'offline'): void;
}

/**
 * Which live sockets each agent has, and which rooms each of those sockets is subscribed to.
 * The realtime layer decides `presence:update` from it (first socket of an agent into a room:
 * online; last socket out: offline) and the directory reads `onlineAgents` from it.
 *
 * Everything is async and keyed by socket id so that a shared implementation (Redis: a set of
 * socket ids per agent and per agent+room, with the node's sockets expiring when it dies) can
 * replace the in-memory one without touching its callers. Every operation is idempotent: joining
 * twice counts once, forgetting an unknown socket is a no-op.
 */
export interface PresenceTracker extends PresenceReader {
  /**
   * Registers a live socket of `agentId` subscribed to `roomIds`. Returns the agent's number of
   * live sockets including this one, and the rooms where this is the agent's first socket.
   */
  connect(agentId: string, socketId: string, roomIds: readonly string[]): Promise<{ connections: number; firstInRooms: string[] }>;
  /** Forgets a socket; returns the rooms where it was the agent's last socket. */
  disconnect(agentId: string, socketId: string): Promise<string[]>;
  /** One socket joins a room; true when the agent had no socket in it before. Unknown sockets are ignored. */
  join(agentId: string, socketId: string, roomId: string): Promise<boolean>;
  /** One socket leaves a room; true when it was the agent's last socket in it. */
  leave(agentId: string, socketId: string, roomId: string): Promise<boolean>;
  /** Every live socket of the agent joins (a membership was added); true when the agent is now newly present there. */
  joinAllSockets(agentId: string, roomId: string): Promise<boolean>;
  /** Every socket of the agent leaves (a membership was removed); true when the agent was present there. */
  leaveAllSockets(agentId: string, roomId: string): Promise<boolean>;
  /** Live sockets of the agent (the per-agent connection limit). */
  connectionCount(agentId: string): Promise<number>;
  /** Starts the tracker's own work (heartbeat, sweeping dead nodes); nothing to do in memory. */
  start(hooks: PresenceHooks): void;
  /** Stops it, after this node's sockets were disconnected (graceful shutdown). */
  stop(): Promise<void>;
}

/**
 * One node's view, in memory: the tracker of a single node. With REDIS_URL, context.ts wires the
 * shared one (redis-presence.ts) instead.
 */
export function createMemoryPresence(): PresenceTracker {
  // agentId -> socketId -> rooms that socket is subscribed to
  const agents = new Map<string, Map<string, Set<string>>>();

  const socketsOf = (agentId: string): Map<string, Set<string>> | undefined => agents.get(agentId);
  const presentIn = (sockets: Map<string, Set<string>> | undefined, roomId: string, except?: string): boolean => {
    if (!sockets) return false;
    for (const [socketId, rooms] of sockets) if (socketId !== except && rooms.has(roomId)) return true;
    return false;
  };

  const tracker: PresenceTracker = {
    connect(agentId, socketId, roomIds) {
      let sockets = agents.get(agentId);
      if (!sockets) agents.set(agentId, (sockets = new Map()));
      const firstInRooms = [...new Set(roomIds)].filter((roomId) => !presentIn(sockets, roomId, socketId));
      const rooms = sockets.get(socketId) ?? new Set<string>();
      for (const roomId of roomIds) rooms.add(roomId);
      sockets.set(socketId, rooms);
      return Promise.resolve({ connections: sockets.size, firstInRooms });
    },

    disconnect(agentId, socketId) {
      const sockets = socketsOf(agentId);
      const rooms = sockets?.get(socketId);
      if (!sockets || !rooms) return Promise.resolve([]);
      sockets.delete(socketId);
      if (sockets.size === 0) agents.delete(agentId);
      return Promise.resolve([...rooms].filter((roomId) => !presentIn(sockets, roomId)));
    },

    join(agentId, socketId, roomId) {
      const sockets = socketsOf(agentId);
      const rooms = sockets?.get(socketId);
      if (!rooms) return Promise.resolve(false);
      const first = !presentIn(sockets, roomId);
      rooms.add(roomId);
      return Promise.resolve(first);
    },

    leave(agentId, socketId, roomId) {
      const sockets = socketsOf(agentId);
      const rooms = sockets?.get(socketId);
      if (!rooms || !rooms.delete(roomId)) return Promise.resolve(false);
      return Promise.resolve(!presentIn(sockets, roomId));
    },

    joinAllSockets(agentId, roomId) {
      const sockets = socketsOf(agentId);
      if (!sockets || sockets.size === 0) return Promise.resolve(false);
      const first = !presentIn(sockets, roomId);
      for (const rooms of sockets.values()) rooms.add(roomId);
      return Promise.resolve(first);
    },

    leaveAllSockets(agentId, roomId) {
      const sockets = socketsOf(agentId);
      let present = false;
      for (const rooms of sockets?.values() ?? []) if (rooms.delete(roomId)) present = true;
      return Promise.resolve(present);
    },

    connectionCount(agentId) {
      return Promise.resolve(socketsOf(agentId)?.size ?? 0);
    },

    onlineAgents(agentIds) {
      return Promise.resolve(new Set(agentIds.filter((id) => (agents.get(id)?.size ?? 0) > 0)));
    },

    start() {},

    stop() {
      return Promise.resolve();
    },
  };
  return tracker;
}
