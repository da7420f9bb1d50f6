import type { Role, ScopeAction } from '@agent-messaging/protocol';

<<<<<<< HEAD
/** What a scoped token may be limited to (docs/scopes.md); authz.ts says which call needs which. */
export type ScopeAction = 'messages:read' | 'messages:write' | 'rooms:read' | 'feed:read' | 'feed:write'
  | 'directory:read' | 'webhooks:manage' | 'admin';
export const SCOPE_ACTIONS: readonly ScopeAction[] = [
  'messages:read', 'messages:write', 'rooms:read', 'feed:read', 'feed:write', 'directory:read', 'webhooks:manage', 'admin',
];
=======
export { ROLES, SCOPE_ACTIONS, type Role, type ScopeAction } from '@agent-messaging/protocol';
>>>>>>> wt-ws

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
}
