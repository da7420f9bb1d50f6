import type { Kysely } from 'kysely';
import { notFound, validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { listAgents, type Skill } from '../agents/agents.store.js';
import type { Authz } from '../authz/authz.js';
import type { PresenceReader } from '../../presence/presence.js';
import { ROLES, type Principal, type Role } from '../principal.js';

export interface DirectoryEntry {
  id: string;
  name: string;
  displayName: string;
  role: Role;
  online: boolean;
  description: string;
  skills: Skill[];
}

export interface Directory {
  companyId: string;
  agents: DirectoryEntry[];
  /** Number of agents returned, after the role filter. */
  total: number;
}

export interface DirectoryQuery {
  role?: unknown;
}

export interface DirectoryService {
  list(principal: Principal | null, companyId: string, query: DirectoryQuery): Promise<Directory>;
}

export function createDirectoryService(deps: { db: Kysely<DB>; authz: Authz; companyId: string; presence: PresenceReader }): DirectoryService {
  const { db, authz, companyId, presence } = deps;
  return {
    async list(principal, requestedCompanyId, query) {
      authz.requireAgent(principal, 'directory:read');
      // One deployment serves one company (COMPANY_ID); any other is unknown here.
      if (requestedCompanyId !== companyId) throw notFound('Company');
      const role = parseRoleFilter(query.role);
      const agents = await listAgents(db, role);
      const online = await presence.onlineAgents(agents.map((a) => a.id));
      return {
        companyId,
        agents: agents.map((a) => ({ id: a.id, name: a.name, displayName: a.displayName, role: a.role, online: online.has(a.id), description: a.description, skills: a.skills })),
        total: agents.length,
      };
    },
  };
}

/** The `role` filter of the directory: absent or empty means every role. */
export function parseRoleFilter(raw: unknown): Role | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw validationError({ role: 'must be given once' });
  if (!(ROLES as readonly string[]).includes(raw)) throw validationError({ role: `must be one of ${ROLES.map((r) => JSON.stringify(r)).join(', ')}` });
  return raw as Role;
}
