import type { Logger } from 'pino';
import { agentChannel, type RoomSyncRequest } from './protocol.js';
import type { AgentsNamespace } from './subscriptions.js';

/**
 * Subscribing or unsubscribing every live socket of an agent (a membership was added or removed),
 * finished on every node before the caller goes on: DESIGN.md wants a removed member unsubscribed
 * "before the request answers, on every node".
 *
 * The Redis adapter's `socketsJoin`/`socketsLeave` are fire-and-forget across nodes: they publish a
 * request and return. A message published later by the same node is ordered behind that request,
 * but one broadcast by node B itself (a REST or WebSocket send that reached B right after the
 * DELETE answered on A) goes to B's local sockets at once, possibly before B has read A's request.
 * So the cluster version asks every other node through `serverSideEmitWithAck` and waits for each
 * one to have applied the change to its own sockets: one Redis round trip plus the slowest node's
 * reply, for an operation that is rare next to messages.
 *
 * A node that does not answer in time (frozen, overloaded) is logged and not waited for any longer:
 * the membership is committed, and that node applies the request when it reads it, before any
 * broadcast published after it.
 */
export interface RoomSync {
  joinAll(agentId: string, channel: string): Promise<void>;
  leaveAll(agentId: string, channel: string): Promise<void>;
}

export const ROOM_SYNC_TIMEOUT_MS = 2000;

const apply = (nsp: AgentsNamespace, { action, agentId, channel }: RoomSyncRequest): void => {
  const sockets = nsp.local.in(agentChannel(agentId));
  if (action === 'join') sockets.socketsJoin(channel);
  else sockets.socketsLeave(channel);
};

/** One node (in-memory adapter): the change is applied synchronously. */
export function createLocalRoomSync(nsp: AgentsNamespace): RoomSync {
  return {
    joinAll(agentId, channel) {
      apply(nsp, { action: 'join', agentId, channel });
      return Promise.resolve();
    },
    leaveAll(agentId, channel) {
      apply(nsp, { action: 'leave', agentId, channel });
      return Promise.resolve();
    },
  };
}

const isRequest = (value: unknown): value is RoomSyncRequest => {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (r.action === 'join' || r.action === 'leave') && typeof r.agentId === 'string' && typeof r.channel === 'string';
};

/** Several nodes (Redis adapter): applied here, then on every other node, acknowledged. */
export function createClusterRoomSync(nsp: AgentsNamespace, logger: Logger, timeoutMs = ROOM_SYNC_TIMEOUT_MS): RoomSync {
  nsp.on('rooms:sync', (request, ack) => {
    if (!isRequest(request)) return; // not ours: never acknowledged, the sender times out and logs it
    apply(nsp, request);
    if (typeof ack === 'function') ack(true);
  });

  const sync = async (request: RoomSyncRequest): Promise<void> => {
    apply(nsp, request);
    let timer: NodeJS.Timeout | undefined;
    // The adapter answers a timeout itself, but not a failed server count (Redis down): a backstop.
    const backstop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs + 500} ms`)), timeoutMs + 500);
    });
    try {
      await Promise.race([nsp.serverSideEmitWithAck('rooms:sync', request), backstop]);
    } catch (err) {
      const answered = (err as { responses?: unknown[] }).responses?.length;
      logger.warn({ action: request.action, answered, err: { message: err instanceof Error ? err.message : String(err) } },
        'room subscription change not confirmed by every node; they apply it when they read it');
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    joinAll: (agentId, channel) => sync({ action: 'join', agentId, channel }),
    leaveAll: (agentId, channel) => sync({ action: 'leave', agentId, channel }),
  };
}
