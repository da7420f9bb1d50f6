import type { AuthzMode } from '../../config/config.js';
import { forbidden, unauthenticated } from '../../errors.js';
import type { Principal } from '../principal.js';

/**
 * The authorisation policy in one place. SPEC.md Phase 1 ("open") marks admin-only and membership
 * checks on several endpoints as future enforcement; "strict" switches them on (DESIGN.md section 6).
 */
export interface Authz {
  readonly mode: AuthzMode;
  /** Always required: an authenticated agent. */
  requireAgent(principal: Principal | null): Principal;
  /** Always required: an admin (e.g. room creation). */
  requireAdmin(principal: Principal | null): Principal;
  /** Admin required only in strict mode (agent, token and membership endpoints). */
  requireAdminWhenStrict(principal: Principal | null): Principal | null;
  /** An authenticated agent required only in strict mode (room listings). */
  requireAgentWhenStrict(principal: Principal | null): Principal | null;
  /** Whether reading a room's history needs membership. */
  readonly historyNeedsMembership: boolean;
  /**
   * Whether a session JWT ends when the API token it was exchanged for is revoked (strict mode).
   * SPEC.md Phase 1 makes JWTs irrevocable: in open mode a revocation only stops new exchanges.
   */
  readonly sessionsEndWithToken: boolean;
}

export function createAuthz(mode: AuthzMode): Authz {
  const requireAgent = (principal: Principal | null): Principal => {
    if (principal === null) throw unauthenticated();
    return principal;
  };
  const requireAdmin = (principal: Principal | null): Principal => {
    const p = requireAgent(principal);
    if (p.role !== 'admin') throw forbidden('Admin role required');
    return p;
  };
  const strict = mode === 'strict';
  return {
    mode,
    requireAgent,
    requireAdmin,
    requireAdminWhenStrict: (principal) => (strict ? requireAdmin(principal) : principal),
    requireAgentWhenStrict: (principal) => (strict ? requireAgent(principal) : principal),
    historyNeedsMembership: strict,
    sessionsEndWithToken: strict,
  };
}
