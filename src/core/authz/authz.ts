import type { AuthzMode } from '../../config/config.js';
import { AppError, forbidden, roomNotFound, unauthenticated } from '../../errors.js';
import type { RoomKind } from '../../store/schema.js';
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

/*
 * Role and room-kind rules (docs/scopes.md, One policy): the services ask these and state none of
 * their own. A room's kind is asked for lazily (`kindOf`), only when the answer depends on it.
 */

/** An admin reads and searches every group room without joining it; anyone else, their own rooms. */
export const readsEveryGroupRoom = (caller: Principal): boolean => caller.role === 'admin';

/** Whether the caller reads (or searches) the room without being one of its members: an admin, a group room. */
export async function readsWithoutMembership(caller: Principal, kindOf: () => Promise<RoomKind>): Promise<boolean> {
  return readsEveryGroupRoom(caller) && (await kindOf()) === 'group';
}

/** Whether reading a room's history needs membership: always in strict mode, and always for a direct room. */
export async function historyNeedsMembership(strict: boolean, kindOf: () => Promise<RoomKind>): Promise<boolean> {
  return strict || (await kindOf()) === 'direct';
}

/** The answer to a non-member: a direct room is private (ROOM_NOT_FOUND), a group room is 403. */
export const nonMemberRefusal = (kind: RoomKind): AppError => (kind === 'direct' ? roomNotFound() : forbidden('Not a member of this room'));

/** Whether a room listing shows every room: open mode, or an admin in strict mode (else the caller's own). */
export const listsEveryRoom = (mode: AuthzMode, caller: Principal): boolean => mode !== 'strict' || caller.role === 'admin';

/** Whether the caller manages another agent's resources (webhooks): the agent itself, or an admin whose token grants `admin`. */
export const managesAgent = (caller: Principal, agentId: string): boolean =>
  caller.agentId === agentId || (caller.role === 'admin' && hasAction(caller, 'admin'));

/** A token limited to rooms reaches only an existing direct room among them, never a new one. */
export const opensDirectRoom = (caller: Principal, existingRoomId: string | null): boolean =>
  caller.scope?.rooms === undefined || (existingRoomId !== null && caller.scope.rooms.includes(existingRoomId));

/** Only its sender edits a message (an admin's moderation is a delete, which leaves a tombstone). */
export const editsMessage = (caller: Principal, senderId: string): boolean => caller.agentId === senderId;

/** Its sender deletes a message, or an admin in a group room (a direct room is its two members' alone). */
export async function deletesMessage(caller: Principal, senderId: string, kindOf: () => Promise<RoomKind>): Promise<boolean> {
  return caller.agentId === senderId || (caller.role === 'admin' && (await kindOf()) === 'group');
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
