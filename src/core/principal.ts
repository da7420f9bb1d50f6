import type { Role, ScopeAction } from '@agent-messaging/protocol';

export { ROLES, SCOPE_ACTIONS, type Role, type ScopeAction } from '@agent-messaging/protocol';

/** A scoped token's grant: absent `actions`, every right of the role; absent `rooms`, every room. */
export interface Scope {
  actions?: readonly ScopeAction[];
  /** Room ids, lowercase. */
  rooms?: readonly string[];
}

/** Who is calling: an authenticated agent. Anonymous callers are `null`. */
export interface Principal {
  agentId: string;
  role: Role;
  /** The API token the session JWT came from, when known. */
  tokenId?: string;
  /** A scoped token's grant (JWT claim `scp`); absent: every right of the role. */
  scope?: Scope;
  /** An OAuth access token's grant (docs/oauth.md): its refusals of a scope are challenges at `/mcp`. */
  oauth?: { grantId: string };
}
