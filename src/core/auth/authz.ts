import type { AuthzMode } from '../../config/config.js';
import { AppError, forbidden, unauthenticated } from '../../errors.js';
import type { Principal, ScopeAction } from '../principal.js';

/**
 * Scoped tokens (docs/scopes.md), enforced here for every transport: each domain service names the
 * action a call needs (`requireAgent(principal, action)`, `requireAction`) and keeps a token's calls
 * inside its rooms (`requireRoom`, `grantedRooms`). A principal without a scope pays one
 * `scope === undefined` test.
 */

/** Whether the principal's token grants the action (an unscoped principal: every action). */
export function hasAction(principal: Principal, action: ScopeAction): boolean {
  const actions = principal.scope?.actions;
  return actions === undefined || actions.includes(action);
}

/** Throws 403 `{details: {scope: "<action> required"}}` unless the principal's token grants the action. */
export function requireAction(principal: Principal, action: ScopeAction): void {
  if (principal.scope === undefined || hasAction(principal, action)) return;
  throw new AppError('FORBIDDEN', `This token does not grant ${action}`, { scope: `${action} required` });
}

/** Whether the principal's token reaches the room (`roomId` lowercase, as every parsed id is). */
export function roomAllowed(principal: Principal, roomId: string): boolean {
  const rooms = principal.scope?.rooms;
  return rooms === undefined || rooms.includes(roomId);
}

/** A room outside the token's rooms is refused as strict mode refuses a non-member (403 FORBIDDEN). */
export function requireRoom(principal: Principal, roomId: string): void {
  if (principal.scope === undefined || roomAllowed(principal, roomId)) return;
  throw forbidden('This token does not grant access to this room');
}

/** The rooms of a listing the principal's token reaches. */
export function grantedRooms<T extends { id: string }>(principal: Principal, rooms: T[]): T[] {
  return principal.scope?.rooms === undefined ? rooms : rooms.filter((room) => roomAllowed(principal, room.id));
}

/**
 * The authorisation policy in one place. Open mode (the default) leaves the admin-only and membership
 * checks of several endpoints unenforced; "strict" switches them on (docs/protocol.md, Open and strict mode).
 */
export interface Authz {
  readonly mode: AuthzMode;
  /** Always required: an authenticated agent, whose token grants `action` when one is named. */
  requireAgent(principal: Principal | null, action?: ScopeAction): Principal;
  /** Always required: an admin (e.g. room creation), whose token grants `admin`. */
  requireAdmin(principal: Principal | null): Principal;
  /**
   * Admin required only in strict mode (agent, token and membership endpoints). A scoped token
   * needs `admin` for them in both modes: what it may do does not depend on the mode.
   */
  requireAdminWhenStrict(principal: Principal | null): Principal | null;
  /** An authenticated agent required only in strict mode (room listings). */
  requireAgentWhenStrict(principal: Principal | null): Principal | null;
  /** Whether reading a room's history needs membership. */
  readonly historyNeedsMembership: boolean;
  /**
   * Whether a session JWT ends when the API token it was exchanged for is revoked (strict mode).
   * Open mode keeps JWTs irrevocable (docs/protocol.md): in open mode a revocation only stops new exchanges.
   */
  readonly sessionsEndWithToken: boolean;
}

export function createAuthz(mode: AuthzMode): Authz {
  const requireAgent = (principal: Principal | null, action?: ScopeAction): Principal => {
    if (principal === null) throw unauthenticated();
    if (action !== undefined) requireAction(principal, action);
    return principal;
  };
  const requireAdmin = (principal: Principal | null): Principal => {
    const p = requireAgent(principal);
    if (p.role !== 'admin') throw forbidden('Admin role required');
    requireAction(p, 'admin');
    return p;
  };
  const strict = mode === 'strict';
  return {
    mode,
    requireAgent,
    requireAdmin,
    requireAdminWhenStrict: (principal) => {
      if (strict) return requireAdmin(principal);
      if (principal !== null) requireAction(principal, 'admin');
      return principal;
    },
    requireAgentWhenStrict: (principal) => (strict ? requireAgent(principal) : principal),
    historyNeedsMembership: strict,
    sessionsEndWithToken: strict,
  };
}
