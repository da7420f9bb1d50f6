/** The two roles of an agent. */
export type Role = 'admin' | 'agent';
export const ROLES: readonly Role[] = ['admin', 'agent'];

/** What a scoped token may be limited to; docs/scopes.md says which call needs which. */
export type ScopeAction = 'messages:read' | 'messages:write' | 'rooms:read' | 'feed:read' | 'feed:write'
  | 'directory:read' | 'webhooks:manage' | 'tasks:read' | 'tasks:write' | 'admin';
export const SCOPE_ACTIONS: readonly ScopeAction[] = [
  'messages:read', 'messages:write', 'rooms:read', 'feed:read', 'feed:write', 'directory:read', 'webhooks:manage', 'tasks:read', 'tasks:write', 'admin',
];
