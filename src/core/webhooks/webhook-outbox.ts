import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { attentionOf } from '../messages/attention.js';
import type { Message } from '../messages/message.js';
import type { OutboxWrites } from '../messages/messages.service.js';
import type { PresenceReader } from '../../presence/presence.js';
import { anyActiveEndpoint, endpointsInRooms, insertDeliveriesStatement, type NewDelivery, type OutboxCandidate } from './webhooks.store.js';

/**
 * The webhook outbox, written in the transaction of the messages it carries (the group commit of
 * messages.service.ts): a committed message always has its deliveries, a rolled-back one never.
 * Which endpoints get them is read before that transaction (`prepare`: on SQLite on the read
 * connection, so the group commit makes no extra round trip to the writer thread), and decided
 * again if the batch is retried.
 *
 * Without an active endpoint anywhere (most deployments) it costs nothing: that is remembered,
 * instead of asked on every group commit (a read there costs tens of microseconds under writes,
 * the read connection's cache being reset by each commit), until an endpoint is registered on any
 * node (the `webhook.created` event, applied on every node before the registration answers:
 * `lookAgain`, called by cluster/event-bridge.ts, as after a gap in the bus). Endpoints are only ever added by registration; removal and disabling can
 * only make "none" truer.
 */
/** An edit or a deletion (docs/threads-and-edits.md): its webhook event and who made it. */
export interface MessageChange {
  event: 'message.updated' | 'message.deleted';
  actorId: string;
}

export interface WebhookOutbox {
  /**
   * The deliveries of these messages, as statements for the messages' transaction; null: none.
   * `taskParties`: the requester and assignee of each task a new message is posted for, by task id,
   * from the sender (the task's row may be written in the same transaction, so it is not read).
   */
  prepare(messages: readonly Message[], change?: MessageChange, taskParties?: ReadonlyMap<string, readonly string[]>): Promise<OutboxWrites | null>;
  /**
   * `message.acked` (docs/acknowledgements.md): to the endpoints of the message's sender that list
   * it, `data` {roomId, messageId, agentId, at}, as statements for the acknowledgement's transaction.
   */
  prepareAcked(message: Message, agentId: string, at: string): Promise<OutboxWrites | null>;
  /** Whether deliveries were recorded since the last call (the worker is woken after the commit). */
  takeRecorded(): boolean;
  /** An endpoint may have been registered (here or on another node): "no endpoint" is no longer known. */
  lookAgain(): void;
}

export interface WebhookOutboxDeps {
  db: Kysely<DB>;
  presence: PresenceReader;
  /** Whether registrations made on other nodes are known to reach this one now (the cluster bus is live). */
  crossNodeLive: () => boolean;
}

export function createWebhookOutbox(deps: WebhookOutboxDeps): WebhookOutbox {
  const { db, presence, crossNodeLive } = deps;
  let recorded = false;
  let noEndpoint = false;

  /**
   * `offline` endpoints are decided here, at commit: the agents with a live WebSocket anywhere now
   * get nothing for these messages, later or ever. A presence outage counts as offline (a
   * duplicate notification is better than a lost one).
   */
  const onlineOf = async (candidates: OutboxCandidate[]): Promise<Set<string>> => {
    const offlineMode = [...new Set(candidates.filter((c) => c.mode === 'offline').map((c) => c.agentId))];
    if (offlineMode.length === 0) return new Set();
    return presence.onlineAgents(offlineMode).catch(() => new Set<string>());
  };

  /** Active endpoints of members of the rooms, or none (remembered while no endpoint exists anywhere). */
  const candidatesIn = async (roomIds: readonly string[]): Promise<OutboxCandidate[]> => {
    // Only while registrations on other nodes are known to reach this one.
    if (noEndpoint && crossNodeLive()) return [];
    if (!(await anyActiveEndpoint(db))) {
      noEndpoint = true;
      return [];
    }
    return endpointsInRooms(db, roomIds);
  };
  const writesOf = (deliveries: NewDelivery[]): OutboxWrites | null => (deliveries.length === 0 ? null : {
    statements: [insertDeliveriesStatement(db, deliveries)],
    committed() {
      recorded = true;
    },
  });

  return {
    async prepareAcked(message, agentId, at) {
      const { roomId, id: messageId, senderId } = message;
      const candidates = (await candidatesIn([roomId])).filter((c) => c.agentId === senderId && c.events.includes('message.acked') && (c.rooms === null || c.rooms.includes(roomId)));
      if (candidates.length === 0) return null;
      const online = await onlineOf(candidates);
      const payload = JSON.stringify({ roomId, messageId, agentId, at });
      return writesOf(candidates.filter((c) => !(c.mode === 'offline' && online.has(c.agentId)))
        .map((c) => ({ id: uuidv7(), endpointId: c.endpointId, messageId, event: 'message.acked' as const, createdAt: at, payload })));
    },

    async prepare(messages, change, taskParties) {
      const event = change?.event ?? 'message.created';
      // Only while registrations on other nodes are known to reach this one.
      if (noEndpoint && crossNodeLive()) return null;
      if (!(await anyActiveEndpoint(db))) {
        noEndpoint = true;
        return null;
      }
      const candidates = await endpointsInRooms(db, [...new Set(messages.map((m) => m.roomId))]);
      if (candidates.length === 0) return null;
      const online = await onlineOf(candidates);
      const createdAt = nowIso();
      const deliveries: NewDelivery[] = [];
      // A task's message also goes to the other side's endpoints listing task.updated (docs/tasks.md).
      for (const message of messages) {
        const attention = attentionOf(message);
        const sides = message.task === null || change !== undefined ? undefined : taskParties?.get(message.task.id);
        for (const c of candidates) {
          if (sides !== undefined && c.events.includes('task.updated') && sides.includes(c.agentId) && c.agentId !== message.senderId
            && (c.rooms === null || c.rooms.includes(message.roomId)) && !(c.mode === 'offline' && online.has(c.agentId))) {
            deliveries.push({ id: uuidv7(), endpointId: c.endpointId, messageId: message.id, event: 'task.updated', createdAt });
          }
          // Not to the one who acted: the sender of a new message, the editor or deleter of a change.
          if (c.roomId !== message.roomId || c.agentId === (change?.actorId ?? message.senderId)) continue;
          // At most one delivery per new message and endpoint (docs/webhooks.md): the attention event
          // when the message is for the agent's attention and the endpoint lists it.
          const chosen = change !== undefined ? (c.events.includes(event) ? event : null)
            : c.events.includes('message.attention') && attention.includes(c.agentId) ? 'message.attention'
              : c.events.includes('message.created') ? 'message.created' : null;
          if (chosen === null) continue;
          // The room restriction of the scoped JWT that registered the endpoint (docs/scopes.md).
          if (c.rooms !== null && !c.rooms.includes(message.roomId)) continue;
          if (c.mode === 'offline' && online.has(c.agentId)) continue;
          deliveries.push({ id: uuidv7(), endpointId: c.endpointId, messageId: message.id, event: chosen, createdAt });
        }
      }
      return writesOf(deliveries);
    },
    takeRecorded() {
      const was = recorded;
      recorded = false;
      return was;
    },
    lookAgain() {
      noEndpoint = false;
    },
  };
}
