import type { ErrorDetails } from '../../errors.js';
import { SCOPE_ACTIONS, type Scope, type ScopeAction } from '../principal.js';
import { isUuid } from '../validation.js';

/**
 * Scoped tokens (docs/scopes.md): the `actions` and `rooms` keys of a token's `scopes`, checked when
 * the token is issued, carried as issued in the session JWT's `scp` claim, and read back from it
 * into `Principal.scope`. Which call needs which action is authz.ts's business.
 */

const isAction = (value: unknown): value is ScopeAction => SCOPE_ACTIONS.includes(value as ScopeAction);

/** What is wrong with `scopes.actions` and `scopes.rooms` (keyed `scopes.actions`, `scopes.rooms`). */
export function scopeProblems(scopes: Record<string, unknown>): ErrorDetails {
  const details: ErrorDetails = {};
  const { actions, rooms } = scopes;
  if (actions !== undefined) {
    if (!Array.isArray(actions)) details['scopes.actions'] = `must be an array of actions (${SCOPE_ACTIONS.join(', ')})`;
    else {
      const unknown = actions.filter((a) => !isAction(a));
      if (unknown.length > 0) details['scopes.actions'] = `unknown action(s): ${unknown.map((a) => JSON.stringify(a)).join(', ')}; known: ${SCOPE_ACTIONS.join(', ')}`;
    }
  }
  if (rooms !== undefined) {
    if (!Array.isArray(rooms)) details['scopes.rooms'] = 'must be an array of room ids (UUIDs)';
    else if (!rooms.every(isUuid)) details['scopes.rooms'] = 'must contain room ids (UUIDs) only';
  }
  return details;
}

/**
 * The `scp` claim of a session exchanged for a token with these scopes: `actions` and `rooms` as
 * issued, or undefined when the token names neither (every right of the role). A stored value that
 * is not valid (a token issued before these keys were checked) grants nothing rather than everything.
 */
export function scopeClaim(scopes: Record<string, unknown>): { actions?: unknown[]; rooms?: unknown[] } | undefined {
  if (scopes.actions === undefined && scopes.rooms === undefined) return undefined;
  const problems = scopeProblems(scopes);
  const claim: { actions?: unknown[]; rooms?: unknown[] } = {};
  if (scopes.actions !== undefined) claim.actions = problems['scopes.actions'] === undefined ? (scopes.actions as unknown[]) : [];
  if (scopes.rooms !== undefined) claim.rooms = problems['scopes.rooms'] === undefined ? (scopes.rooms as unknown[]) : [];
  return claim;
}

/**
 * The principal's scope from a verified JWT's `scp` claim; null when the claim is malformed (the
 * caller refuses the JWT: only a forged token could carry one). Room ids become lowercase.
 */
export function parseScopeClaim(claim: unknown): Scope | null {
  if (typeof claim !== 'object' || claim === null || Array.isArray(claim)) return null;
  const { actions, rooms, ...rest } = claim as Record<string, unknown>;
  if (Object.keys(rest).length > 0) return null;
  if (Object.keys(scopeProblems({ actions, rooms })).length > 0) return null;
  const scope: Scope = {};
  if (actions !== undefined) scope.actions = actions as ScopeAction[];
  if (rooms !== undefined) scope.rooms = (rooms as string[]).map((id) => id.toLowerCase());
  return scope;
}
