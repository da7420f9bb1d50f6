import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { conflict } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { recordAudit } from '../audit/audit.store.js';
import type { Authz } from '../auth/authz.js';
import type { Principal } from '../principal.js';
import { compile, requireObject } from '../validation.js';
import { CreateAgentInput } from './agents.schema.js';
import { findAgentById, insertAgent, listAgents, type Agent } from './agents.store.js';

const createAgentInput = compile(CreateAgentInput);

export interface AgentsService {
  create(principal: Principal | null, input: unknown): Promise<Agent>;
  list(principal: Principal | null): Promise<Agent[]>;
  get(id: string): Promise<Agent | null>;
}

export function createAgentsService(deps: { db: Kysely<DB>; authz: Authz }): AgentsService {
  const { db, authz } = deps;
  return {
    async create(principal, input) {
      authz.requireAdminWhenStrict(principal);
      const { name, displayName, role } = createAgentInput.parse(requireObject(input));
      const agent: Agent = { id: uuidv7(), name, displayName, role, createdAt: nowIso() };
      try {
        await db.transaction().execute(async (trx) => {
          await insertAgent(trx, agent);
          await recordAudit(trx, { event: 'agent-created', actorId: principal?.agentId ?? null, subjectId: agent.id, detail: { name, role } });
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`Agent name "${name}" already exists`);
        throw err;
      }
      return agent;
    },

    async list(principal) {
      authz.requireAdminWhenStrict(principal);
      return listAgents(db);
    },

    get: (id) => findAgentById(db, id),
  };
}
