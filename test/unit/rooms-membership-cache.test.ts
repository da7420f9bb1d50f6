import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAgentsService } from '../../src/core/agents/agents.service.js';
import { createAuthz } from '../../src/core/authz/authz.js';
import { nullPublisher } from '../../src/core/events.js';
import type { BusPayload } from '../../src/cluster/bus.js';
import { createEventBridge } from '../../src/cluster/event-bridge.js';
import { createMemoryBus } from '../../src/cluster/memory-bus.js';
import { InboxWaiters } from '../../src/core/inbox/inbox-waiters.js';
import { TaskWaiters } from '../../src/core/tasks/task-waiters.js';
import { MembershipCache } from '../../src/core/rooms/membership-cache.js';
import { createRoomsService } from '../../src/core/rooms/rooms.service.js';
import { createMemoryPresence } from '../../src/presence/presence-tracker.js';
import { openDatabase, type Database } from '../../src/store/database.js';

// Several nodes: the cache answers only while other nodes' removals are known to arrive.
describe('rooms service membership checks with a cluster bus', () => {
  let database: Database;
  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
  });
  afterEach(() => database.close());

  async function setup(live: boolean) {
    const authz = createAuthz('open');
    const agents = createAgentsService({ db: database.db, authz });
    const admin = await agents.create(null, { name: 'admin', displayName: 'Admin', role: 'admin' });
    const member = await agents.create(null, { name: 'member', displayName: 'Member', role: 'agent' });
    const rooms = createRoomsService({ db: database.db, authz, events: nullPublisher, membershipCache: new MembershipCache({ ttlMs: 60_000, trusted: () => live }), presence: createMemoryPresence() });
    const room = await rooms.create({ agentId: admin.id, role: 'admin' }, { slug: 'r', name: 'R', members: [member.id] });
    await rooms.assertMember(room.id, member.id); // now cached
    // Removed "on another node" whose announcement never arrives: only the database knows.
    await database.db.deleteFrom('room_members').where('room_id', '=', room.id).where('agent_id', '=', member.id).execute();
    return { rooms, roomId: room.id, memberId: member.id };
  }

  it('asks the database while the bus is not live', async () => {
    const { rooms, roomId, memberId } = await setup(false);
    await expect(rooms.assertMember(roomId, memberId)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('answers from memory while the bus is live (its membership.removed is what keeps it exact)', async () => {
    const { rooms, roomId, memberId } = await setup(true);
    await expect(rooms.assertMember(roomId, memberId)).resolves.toBe('group');
  });

  it('publishes its own removals through the event bridge, one bus message, and forgets them through it', async () => {
    const bus = createMemoryBus({ warn: () => undefined });
    const removals: BusPayload<'membership.removed'>[] = [];
    bus.subscribe('membership.removed', (payload) => void removals.push(payload));
    const membershipCache = new MembershipCache();
    const noop = () => undefined;
    const bridge = createEventBridge({
      bus,
      node: { membershipCache, sessionAuth: { revoked: noop, agentChanged: noop }, apiTokenAuth: { revoked: noop }, webhookOutbox: { lookAgain: noop }, inboxWaiters: new InboxWaiters(), taskWaiters: new TaskWaiters(), activity: { record: noop }, liveOAuth: { revoked: noop, agentChanged: noop } },
      otherNodes: false,
    });
    const authz = createAuthz('open');
    const agents = createAgentsService({ db: database.db, authz });
    const admin = await agents.create(null, { name: 'admin2', displayName: 'Admin', role: 'admin' });
    const member = await agents.create(null, { name: 'member2', displayName: 'Member', role: 'agent' });
    const rooms = createRoomsService({ db: database.db, authz, events: bridge, membershipCache, presence: createMemoryPresence() });
    const room = await rooms.create({ agentId: admin.id, role: 'admin' }, { slug: 'r2', name: 'R', members: [member.id] });
    await rooms.assertMember(room.id, member.id); // now cached
    await rooms.removeMember(null, room.id, member.id);
    expect(removals).toEqual([{ roomId: room.id, agentIds: [member.id] }]);
    await expect(rooms.assertMember(room.id, member.id)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});
