import { roomChannel, type AgentsNamespace, type AgentSocket, type PresenceUpdate } from '../protocol.js';
import type { PresenceTracker } from '../../presence/presence-tracker.js';

/** How long a room's later presence updates wait to go out together, in a burst. */
export const PRESENCE_WINDOW_MS = 50;

export interface PresenceAnnouncer {
  /** `presence:update` to everyone subscribed to the room: at once, or with the room's burst. */
  announce(roomId: string, agentId: string, status: PresenceUpdate['status']): void;
  /** Sends what waits for the room now: called before any other event of the room goes out from this node. */
  flush(roomId: string): void;
  /** Sends everything waiting and stops the windows. */
  close(): void;
}

/**
 * The one place `presence:update` is sent from, to everyone subscribed to the room. Updates are
 * coalesced per room under bursts: a room's first update goes out at once and opens a window of
 * PRESENCE_WINDOW_MS; updates during the window wait and go out together, in order, when it ends
 * (which opens the next). When a room's members come online together (a fleet starting, a node's
 * sockets reconnecting after a restart), each of n arrivals went to every member already there:
 * n²/2 frames and as many writes. Sent together, each member socket gets a window's updates in
 * two writes (engine.io buffers the packets that follow its first write until that completes).
 * An update alone is not delayed, and the room's other events (messages, edits, activity) flush
 * the room first, so a member's message never overtakes its `online`.
 */
export function createPresenceAnnouncer(nsp: AgentsNamespace, windowMs = PRESENCE_WINDOW_MS): PresenceAnnouncer {
  /** Rooms whose window is open, with the updates waiting for its end. */
  const windows = new Map<string, { waiting: PresenceUpdate[]; timer: NodeJS.Timeout }>();
  const send = (roomId: string, updates: readonly PresenceUpdate[]): void => {
    const room = nsp.to(roomChannel(roomId));
    for (const update of updates) room.emit('presence:update', update);
  };
  const open = (roomId: string): void => {
    const timer = setTimeout(() => {
      const waiting = windows.get(roomId)?.waiting ?? [];
      windows.delete(roomId);
      if (waiting.length === 0) return;
      send(roomId, waiting);
      open(roomId); // still busy: the next updates wait for the next window
    }, windowMs).unref();
    windows.set(roomId, { waiting: [], timer });
  };
  return {
    announce(roomId, agentId, status) {
      const window = windows.get(roomId);
      if (window !== undefined) {
        window.waiting.push({ agentId, status });
        return;
      }
      send(roomId, [{ agentId, status }]);
      open(roomId);
    },
    flush(roomId) {
      const window = windows.get(roomId);
      if (window === undefined || window.waiting.length === 0) return;
      const waiting = window.waiting;
      window.waiting = [];
      send(roomId, waiting);
    },
    close() {
      for (const [roomId, window] of windows) {
        clearTimeout(window.timer);
        send(roomId, window.waiting);
      }
      windows.clear();
    },
  };
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
  /** Puts a registered socket in its rooms' channels: once resolved, a message sent from now on reaches it. */
  subscribe(socket: AgentSocket, roomIds: readonly string[]): Promise<void>;
  /** `presence:update` online in the rooms where the socket was its agent's first. */
  announceOnline(socket: AgentSocket, firstInRooms: readonly string[]): void;
  /** After a socket disconnected: offline where it was the agent's last socket. */
  disconnect(socket: AgentSocket): Promise<void>;
  /** `room:join` (and a position check's repair): subscribes the socket (active once resolved); online only when the agent had no socket in the room before (docs/websocket.md). */
  join(socket: AgentSocket, roomId: string): Promise<void>;
  /** `room:leave`: unsubscribes the socket; offline when it was the agent's last socket there. */
  leave(socket: AgentSocket, roomId: string): Promise<void>;
  /** A membership was added (its sockets already joined on every node): online when the agent is newly present. */
  membershipAdded(agentId: string, roomId: string): Promise<void>;
  /** A membership was removed (its sockets already left on every node): offline when the agent was present. */
  membershipRemoved(agentId: string, roomId: string): Promise<void>;
}

/**
 * `offline`: the agent's last socket in those rooms went (its activity there becomes `idle`).
 * `subscribed`: resolves once this node's channel subscriptions asked for so far are active (the
 * Redis adapter subscribes a room's channel on its first socket here).
 */
export function createSubscriptions(presence: PresenceTracker, presenceAnnouncer: PresenceAnnouncer, offline: (agentId: string, roomIds: string[]) => void = () => undefined, subscribed: () => Promise<void> = () => Promise.resolve()): Subscriptions {
  const announce = presenceAnnouncer.announce;

  return {
    async register(socket, roomIds) {
      return presence.connect(socket.data.principal.agentId, socket.id, roomIds);
    },

    async withdraw(socket) {
      await presence.disconnect(socket.data.principal.agentId, socket.id);
    },

    async subscribe(socket, roomIds) {
      socket.join(roomIds.map(roomChannel));
      await subscribed();
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
      await subscribed();
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
