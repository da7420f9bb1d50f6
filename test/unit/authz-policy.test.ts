import { describe, expect, it } from 'vitest';
import {
  deletesMessage, editsMessage, historyNeedsMembership, listsEveryRoom, managesAgent, nonMemberRefusal, opensDirectRoom, readsEveryGroupRoom, readsWithoutMembership,
} from '../../src/core/authz/authz.js';
import type { Principal } from '../../src/core/principal.js';
import type { RoomKind } from '../../src/store/schema.js';

const admin: Principal = { agentId: 'admin-1', role: 'admin' };
const agent: Principal = { agentId: 'agent-1', role: 'agent' };
/** An admin whose token does not grant `admin`. */
const narrowAdmin: Principal = { agentId: 'admin-2', role: 'admin', scope: { actions: ['messages:read'] } };

/** A room kind that counts how often it was asked for. */
function kind(value: RoomKind): { kindOf: () => Promise<RoomKind>; asked: () => number } {
  let asked = 0;
  return {
    kindOf: async () => {
      asked += 1;
      return value;
    },
    asked: () => asked,
  };
}

describe('the authorisation policy (core/authz/authz.ts)', () => {
  it('an admin reads every group room without joining; a direct room needs membership; an agent reads its own rooms', async () => {
    expect(readsEveryGroupRoom(admin)).toBe(true);
    expect(readsEveryGroupRoom(agent)).toBe(false);
    expect(await readsWithoutMembership(admin, kind('group').kindOf)).toBe(true);
    expect(await readsWithoutMembership(admin, kind('direct').kindOf)).toBe(false);
    // An agent's answer does not depend on the room: its kind is not even looked up.
    const room = kind('group');
    expect(await readsWithoutMembership(agent, room.kindOf)).toBe(false);
    expect(room.asked()).toBe(0);
  });

  it('history needs membership in strict mode for every room, in open mode for a direct room only', async () => {
    const group = kind('group');
    expect(await historyNeedsMembership(true, group.kindOf)).toBe(true);
    expect(group.asked()).toBe(0);
    expect(await historyNeedsMembership(false, kind('group').kindOf)).toBe(false);
    expect(await historyNeedsMembership(false, kind('direct').kindOf)).toBe(true);
  });

  it('a non-member of a direct room is told it does not exist; of a group room, 403', () => {
    expect(nonMemberRefusal('direct')).toMatchObject({ code: 'ROOM_NOT_FOUND' });
    expect(nonMemberRefusal('group')).toMatchObject({ code: 'FORBIDDEN' });
  });

  it('room listings: every room in open mode; in strict mode an admin only', () => {
    expect(listsEveryRoom('open', agent)).toBe(true);
    expect(listsEveryRoom('strict', admin)).toBe(true);
    expect(listsEveryRoom('strict', agent)).toBe(false);
  });

  it("an agent's resources are managed by itself or by an admin whose token grants admin", () => {
    expect(managesAgent(agent, agent.agentId)).toBe(true);
    expect(managesAgent(agent, 'someone-else')).toBe(false);
    expect(managesAgent(admin, 'someone-else')).toBe(true);
    expect(managesAgent(narrowAdmin, 'someone-else')).toBe(false);
    expect(managesAgent(narrowAdmin, narrowAdmin.agentId)).toBe(true);
  });

  it('a token limited to rooms opens only an existing direct room among them', () => {
    const limited: Principal = { ...agent, scope: { rooms: ['room-1'] } };
    expect(opensDirectRoom(agent, null)).toBe(true);
    expect(opensDirectRoom(limited, null)).toBe(false);
    expect(opensDirectRoom(limited, 'room-2')).toBe(false);
    expect(opensDirectRoom(limited, 'room-1')).toBe(true);
  });

  it('only its sender edits a message; its sender or an admin in a group room deletes it, the kind asked only for an admin', async () => {
    expect(editsMessage(agent, agent.agentId)).toBe(true);
    expect(editsMessage(admin, agent.agentId)).toBe(false);
    const group = kind('group');
    expect(await deletesMessage(agent, agent.agentId, group.kindOf)).toBe(true);
    expect(group.asked()).toBe(0);
    expect(await deletesMessage(admin, agent.agentId, group.kindOf)).toBe(true);
    expect(await deletesMessage(admin, agent.agentId, kind('direct').kindOf)).toBe(false);
    expect(await deletesMessage({ agentId: 'agent-2', role: 'agent' }, agent.agentId, group.kindOf)).toBe(false);
  });
});
