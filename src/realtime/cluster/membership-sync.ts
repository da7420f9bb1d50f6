import type { ClusterBus } from '../../cluster/bus.js';
import { membershipFollowers, roomChannel, type AgentsNamespace } from '../protocol.js';

/**
 * Each node's part of a membership change (the bus's `membership.added` / `membership.removed`,
 * published by the rooms service): the agent's sockets on this node join or leave the room's
 * channel. The publisher waits for every node's acknowledgement, so once a removal answers no node
 * delivers the room's `message:new` to the agent (docs/websocket.md: "before the request answers, on every
 * node"). The adapter's own `socketsJoin`/`socketsLeave` are fire-and-forget across nodes, hence
 * `local` here and the bus for the crossing.
 */
export function syncMembershipsFromBus(bus: ClusterBus, nsp: AgentsNamespace): void {
  bus.subscribe('membership.added', ({ agentId, roomId }) => {
    nsp.local.in(membershipFollowers(agentId, roomId)).socketsJoin(roomChannel(roomId));
  });
  bus.subscribe('membership.removed', ({ agentId, roomId }) => {
    nsp.local.in(membershipFollowers(agentId, roomId)).socketsLeave(roomChannel(roomId));
  });
}
