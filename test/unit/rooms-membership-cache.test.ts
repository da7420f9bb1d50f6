import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAgentsService } from '../../src/core/agents/agents.service.js';
import { createAuthz } from '../../src/core/auth/authz.js';
import { nullPublisher } from '../../src/core/events.js';
import { MembershipCache, type MembershipRemovals } from '../../src/core/rooms/membership-cache.js';
import { createRoomsService } from '../../src/core/rooms/rooms.service.js';
import { openDatabase, type Database } from '../../src/store/database.js';

// Several nodes: the cache answers only while other nodes' removals are known to arrive.
describe('rooms service membership checks with a removals channel', () => {
  let database: Database;
  beforeEach(async () => {
    database = await openDatabase({ kind: 'sqlite', path: ':memory:' }, { error: () => undefined });
  });
  afterEach(() => database.close());

  async function setup(removals: MembershipRemovals) {
    const authz = createAuthz('open');
    const agents = createAgentsService({ db: database.db, authz });
    const admin = await agents.create(null, { name: 'admin', displayName: 'Admin', role: 'admin' });
    const member = await agents.create(null, { name: 'member', displayName: 'Member', role: 'agent' });
    const rooms = createRoomsService({ db: database.db, authz, events: nullPublisher, membershipCache: new MembershipCache({ ttlMs: 60_000 }), membershipRemovals: removals });
    const room = await rooms.create({ agentId: admin.id, role: 'admin' }, { slug: 'r', name: 'R', members: [member.id] });
    await rooms.assertMember(room.id, member.id); // now cached
    // Removed "on another node" whose announcement never arrives: only the database knows.
    await database.db.deleteFrom('room_members').where('room_id', '=', room.id).where('agent_id', '=', member.id).execute();
    return { rooms, roomId: room.id, memberId: member.id };
  }

  it('asks the database while the channel is down', async () => {
    const { rooms, roomId, memberId } = await setup({ live: false, announce: () => Promise.resolve() });
    await expect(rooms.assertMember(roomId, memberId)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });

  it('answers from memory while the channel is live (the announcement is what keeps it exact)', async () => {
    const { rooms, roomId, memberId } = await setup({ live: true, announce: () => Promise.resolve() });
    await expect(rooms.assertMember(roomId, memberId)).resolves.toBeUndefined();
  });

  it('announces its own removals to the other nodes', async () => {
    const announced: [string, string][] = [];
    const authz = createAuthz('open');
    const agents = createAgentsService({ db: database.db, authz });
    const admin = await agents.create(null, { name: 'admin2', displayName: 'Admin', role: 'admin' });
    const member = await agents.create(null, { name: 'member2', displayName: 'Member', role: 'agent' });
    const rooms = createRoomsService({
      db: database.db,
      authz,
      events: nullPublisher,
      membershipCache: new MembershipCache(),
      membershipRemovals: { live: true, announce: (r, a) => Promise.resolve(void announced.push([r, a])) },
    });
    const room = await rooms.create({ agentId: admin.id, role: 'admin' }, { slug: 'r2', name: 'R', members: [member.id] });
    await rooms.removeMember(null, room.id, member.id);
    expect(announced).toEqual([[room.id, member.id]]);
    await expect(rooms.assertMember(room.id, member.id)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});
