import { describe, expect, it } from 'vitest';
import { createAuthz, grantedRooms, hasAction, requireAction, requireRoom, roomAllowed } from '../../src/core/authz/authz.js';
import { createJwtCodec } from '../../src/core/auth/jwt.js';
import { parseScopeClaim, scopeClaim, scopeProblems } from '../../src/core/auth/scopes.js';
import type { Principal } from '../../src/core/principal.js';

const AGENT = '0190a5d0-1234-7abc-8def-0123456789ab';
const ROOM = '0190a5d0-5678-7abc-8def-0123456789ab';
const OTHER_ROOM = '0190a5d0-9999-7abc-8def-0123456789ab';

describe('token scopes', () => {
  it('a JWT carries scp as issued and verifies into principal.scope, room ids lowercase', () => {
    const codec = createJwtCodec('unit-test-secret-unit-test-secret-0123', 300);
    const scp = scopeClaim({ actions: ['messages:read'], rooms: [ROOM.toUpperCase()], other: 1 });
    expect(scp).toEqual({ actions: ['messages:read'], rooms: [ROOM.toUpperCase()] });
    const { token, claims } = codec.sign({ agentId: AGENT, role: 'agent', tokenId: 't1', scope: scp });
    expect(claims.scp).toEqual(scp);
    expect(codec.verify(token)).toEqual({ agentId: AGENT, role: 'agent', tokenId: 't1', exp: claims.exp, scope: { actions: ['messages:read'], rooms: [ROOM] } });
    expect(codec.verify(codec.sign({ agentId: AGENT, role: 'agent' }).token)).not.toHaveProperty('scope');
  });

  it('a token without actions or rooms has no claim; an invalid stored value grants nothing', () => {
    expect(scopeClaim({})).toBeUndefined();
    expect(scopeClaim({ note: 'x' })).toBeUndefined();
    expect(scopeClaim({ actions: 'all', rooms: ['x'] })).toEqual({ actions: [], rooms: [] });
  });

  it('names the failing key', () => {
    expect(scopeProblems({ actions: ['rooms:read', 'rooms:write'] })).toEqual({ 'scopes.actions': expect.stringContaining('"rooms:write"') });
    expect(scopeProblems({ rooms: [ROOM, 'x'] })).toEqual({ 'scopes.rooms': expect.any(String) });
    expect(scopeProblems({ actions: [], rooms: [] })).toEqual({});
    expect(parseScopeClaim({ actions: [], more: [] })).toBeNull();
  });

  it('checks actions and rooms; an unscoped principal passes every check', () => {
    const open: Principal = { agentId: AGENT, role: 'admin' };
    const limited: Principal = { agentId: AGENT, role: 'admin', scope: { actions: ['messages:read'], rooms: [ROOM] } };
    expect(hasAction(open, 'admin') && roomAllowed(open, OTHER_ROOM)).toBe(true);
    expect(() => requireAction(limited, 'messages:write')).toThrow(expect.objectContaining({ status: 403, details: { scope: 'messages:write required' } }));
    expect(() => requireRoom(limited, OTHER_ROOM)).toThrow(expect.objectContaining({ code: 'FORBIDDEN' }));
    expect(grantedRooms(limited, [{ id: ROOM }, { id: OTHER_ROOM }])).toEqual([{ id: ROOM }]);
    for (const mode of ['open', 'strict'] as const) {
      expect(() => createAuthz(mode).requireAdminWhenStrict(limited)).toThrow(expect.objectContaining({ details: { scope: 'admin required' } }));
      expect(createAuthz(mode).requireAdminWhenStrict(open)).toBe(open);
    }
  });
});
