export type Role = 'admin' | 'agent';
export const ROLES: readonly Role[] = ['admin', 'agent'];

/** Who is calling: an authenticated agent. Anonymous callers are `null`. */
export interface Principal {
  agentId: string;
  role: Role;
  /** The API token the session JWT came from, when known. */
  tokenId?: string;
}
