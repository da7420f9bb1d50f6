import { ACTIVITY_TTL_MS, SetActivityInput, type ActivityUpdatePayload, type ActivityView } from '@agent-messaging/protocol';
import { requireRoom, type Authz } from '../authz/authz.js';
import type { DomainEvent, EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import type { RoomsService } from '../rooms/rooms.service.js';
import { compile, parseId, requireObject } from '../validation.js';

export type ActivityUpdateEvent = ActivityUpdatePayload;
export type { ActivityView };

/** At most one update per agent and room within this long of the last one sent (docs/protocol.md, Activity). */
export const ACTIVITY_THROTTLE_MS = 1000;
/** How often forgotten states and idle throttles are swept from memory. */
const SWEEP_MS = 10_000;

const setInput = compile(SetActivityInput);

export interface ActivityService {
  /** `POST /api/v1/rooms/:id/activity`, `activity:set`, MCP `set_activity`: members only, in both modes. */
  set(principal: Principal | null, roomId: unknown, input: unknown): Promise<void>;
  /** The member's current activity as this node knows it (its own updates and those of the other nodes); null when none or expired. */
  of(roomId: string, agentId: string): ActivityView | null;
  /** A members listing with each member's `activity` (null when none). */
  withActivity<M extends { agentId: string }>(roomId: string, listing: { members: M[] }): { members: (M & { activity: ActivityView | null })[] };
  /** An update sent by another node (through the event bridge): remembered for the members listing. */
  record(update: ActivityUpdateEvent): void;
  /** The agent's last socket in these rooms went: `idle` where it showed something. */
  gone(agentId: string, roomIds: readonly string[]): void;
  /** Listens to `message.created`: a message sent in the room makes its sender `idle`. */
  readonly listener: EventPublisher;
  close(): void;
}

export interface ActivityServiceDeps {
  authz: Authz;
  rooms: Pick<RoomsService, 'assertMember'>;
  events: EventPublisher;
}

interface Throttle {
  lastSentAt: number;
  held?: ActivityUpdateEvent;
  timer?: NodeJS.Timeout;
}

/**
 * Activity lives in memory only (never stored). Each node keeps the latest update of every member
 * of every room it heard of, its own and those other nodes' bridges tell it, so that any node's
 * members listing shows it; the sockets get updates through the room's Socket.IO channel. Each
 * node throttles what it sends, and counts what the other nodes sent as sent: a burst through one
 * node or several costs the room one update per agent per second (two nodes sending within the
 * bus's delivery time of each other may each send one).
 */
export function createActivityService({ authz, rooms, events }: ActivityServiceDeps): ActivityService {
  /** `${roomId} ${agentId}` -> the latest update sent. */
  const board = new Map<string, ActivityUpdateEvent>();
  const throttles = new Map<string, Throttle>();
  const keyOf = (roomId: string, agentId: string): string => `${roomId} ${agentId}`;

  const current = (key: string, now = Date.now()): ActivityUpdateEvent | null => {
    const update = board.get(key);
    if (update === undefined || update.state === 'idle') return null;
    if (update.expiresAt !== null && Date.parse(update.expiresAt) <= now) return null;
    return update;
  };

  const record = (update: ActivityUpdateEvent): void => {
    const key = keyOf(update.roomId, update.agentId);
    if (update.state === 'idle') board.delete(key);
    else board.set(key, update);
  };

  const send = (update: ActivityUpdateEvent): void => {
    record(update);
    const event: DomainEvent = { type: 'activity.changed', update };
    void Promise.resolve(events.publish(event)).catch(() => undefined); // fan-out logs its own failures
  };

  /** Sends now, or holds the latest update until a second has passed since the last one sent. */
  const emit = (update: ActivityUpdateEvent): void => {
    const key = keyOf(update.roomId, update.agentId);
    const now = Date.now();
    const throttle = throttles.get(key);
    if (throttle === undefined || (throttle.timer === undefined && now - throttle.lastSentAt >= ACTIVITY_THROTTLE_MS)) {
      throttles.set(key, { lastSentAt: now });
      send(update);
      return;
    }
    throttle.held = update;
    throttle.timer ??= setTimeout(() => {
      const held = throttle.held;
      throttle.held = undefined;
      throttle.timer = undefined;
      throttle.lastSentAt = Date.now();
      if (held !== undefined) send(held);
    }, throttle.lastSentAt + ACTIVITY_THROTTLE_MS - now);
  };

  /** Whether the agent shows something in the room, sent or held. */
  const showing = (roomId: string, agentId: string): boolean => {
    const key = keyOf(roomId, agentId);
    const held = throttles.get(key)?.held;
    return held !== undefined ? held.state !== 'idle' : current(key) !== null;
  };
  const idle = (roomId: string, agentId: string): void => {
    if (showing(roomId, agentId)) emit({ roomId, agentId, state: 'idle', text: '', expiresAt: null });
  };

  const of = (roomId: string, agentId: string): ActivityView | null => {
    const update = current(keyOf(roomId, agentId));
    return update === null ? null : { state: update.state, text: update.text, expiresAt: update.expiresAt };
  };

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const key of board.keys()) if (current(key, now) === null) board.delete(key);
    for (const [key, t] of throttles) if (t.timer === undefined && now - t.lastSentAt >= ACTIVITY_THROTTLE_MS) throttles.delete(key);
  }, SWEEP_MS);
  sweep.unref();

  return {
    async set(principal, rawRoomId, input) {
      const agent = authz.requireAgent(principal, 'messages:write');
      const roomId = parseId(rawRoomId, 'roomId');
      const { state, text } = setInput.parse(requireObject(input));
      await rooms.assertMember(roomId, agent.agentId);
      requireRoom(agent, roomId);
      const expiresAt = state === 'idle' ? null : new Date(Date.now() + ACTIVITY_TTL_MS[state]).toISOString();
      emit({ roomId, agentId: agent.agentId, state, text: state === 'idle' ? '' : (text ?? ''), expiresAt });
    },
    of,
    withActivity(roomId, { members }) {
      const id = roomId.toLowerCase();
      return { members: members.map((m) => ({ ...m, activity: of(id, m.agentId) })) };
    },
    record(update) {
      record(update);
      // An update another node sent counts as sent here too: a set through this node within the
      // second after it is held, so the room gets one update per agent per second across nodes.
      const key = keyOf(update.roomId, update.agentId);
      const throttle = throttles.get(key);
      if (throttle === undefined) throttles.set(key, { lastSentAt: Date.now() });
      else if (throttle.timer === undefined) throttle.lastSentAt = Math.max(throttle.lastSentAt, Date.now());
    },
    gone(agentId, roomIds) {
      for (const roomId of roomIds) idle(roomId, agentId);
    },
    listener: {
      publish(event) {
        if (event.type === 'message.created') idle(event.message.roomId, event.message.senderId);
      },
    },
    close() {
      clearInterval(sweep);
      for (const t of throttles.values()) clearTimeout(t.timer);
      throttles.clear();
    },
  };
}
