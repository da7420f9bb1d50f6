import type { Kysely } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { agentsNotFound, conflict, notFound, validationError } from '../../errors.js';
import { isUniqueViolation } from '../../store/errors.js';
import type { DB } from '../../store/schema.js';
import { nowIso } from '../../store/values.js';
import { endGrants } from '../oauth/oauth-grants.store.js';
import { recordAudit } from '../audit/audit.store.js';
import type { Authz } from '../authz/authz.js';
import { nullPublisher, type EventPublisher } from '../events.js';
import type { Principal } from '../principal.js';
import { compile, isUuid, parseId, requireObject } from '../validation.js';
import { CreateAgentInput, UpdateAgentInput } from '@agent-messaging/protocol';
import {
  findAgentById, findAgentIdsByName, findAgentNames, findExistingAgentIds, insertAgent, listAgents, setAgentDisabledAt, updateAgent, type Agent, type AgentChanges,
} from './agents.store.js';

const createAgentInput = compile(CreateAgentInput);
const updateAgentInput = compile(UpdateAgentInput);
const UPDATABLE = ['displayName', 'description', 'skills'] as const;

export interface AgentsService {
  create(principal: Principal | null, input: unknown): Promise<Agent>;
  list(principal: Principal | null): Promise<Agent[]>;
  get(id: string): Promise<Agent | null>;
  /** id -> name of the given agents (message items for language models show who wrote them). */
  names(ids: readonly string[]): Promise<Map<string, string>>;
  /**
   * Agents named by id or name (MCP tools, the command line) as ids, in their order: a UUID is
   * returned as it is (the service it is passed to checks it), a name is looked up; an unknown name
   * is NOT_FOUND naming it, as an unknown id is where the service checks it.
   */
  resolveIds(refs: readonly string[]): Promise<string[]>;
  /**
   * docs/protocol.md, Disabled agents: a disabled agent cannot open sessions, its JWTs are refused and its live
   * sockets are closed (the `agent.disabled` event, published after commit). Its API tokens stay as
   * they are and work again once it is enabled. Both are idempotent: the state is the answer.
   */
  disable(principal: Principal | null, id: unknown): Promise<Agent>;
  enable(principal: Principal | null, id: unknown): Promise<Agent>;
  /**
   * docs/protocol.md, Agent profiles: the agent itself or an admin (whose scoped token needs `admin`
   * for another agent) changes its display name, description or skills, in both modes; audit
   * `agent-updated`.
   */
  update(principal: Principal | null, id: unknown, input: unknown): Promise<Agent>;
}

/** The changes a PATCH body asks for, checked: at least one field, skills with distinct ids. */
function parseChanges(input: unknown): AgentChanges {
  const body = updateAgentInput.parse(requireObject(input));
  const changes: AgentChanges = {};
  if (body.displayName !== undefined) changes.displayName = body.displayName;
  if (body.description !== undefined) changes.description = body.description;
  if (body.skills !== undefined) {
    changes.skills = body.skills.map((skill) => ({ id: skill.id, name: skill.name, description: skill.description ?? '', tags: skill.tags ?? [] }));
    const seen = new Set<string>();
    for (const [i, skill] of changes.skills.entries()) {
      if (seen.has(skill.id)) throw validationError({ skills: `skills[${i}].id: repeats the id "${skill.id}" of an earlier skill` });
      seen.add(skill.id);
    }
  }
  if (Object.keys(changes).length === 0) throw validationError({ body: `must set at least one of ${UPDATABLE.join(', ')}` });
  return changes;
}

export function createAgentsService(deps: { db: Kysely<DB>; authz: Authz; events?: EventPublisher }): AgentsService {
  const { db, authz } = deps;
  const events = deps.events ?? nullPublisher;

  const setDisabled = async (principal: Principal | null, rawId: unknown, disable: boolean): Promise<Agent> => {
    authz.requireAdminWhenStrict(principal);
    const id = parseId(rawId, 'id');
    const result = await db.transaction().execute(async (trx) => {
      const set = await setAgentDisabledAt(trx, id, disable ? nowIso() : null);
      if (set?.changed) {
        await recordAudit(trx, { event: disable ? 'agent-disabled' : 'agent-enabled', actorId: principal?.agentId ?? null, subjectId: id });
        // Its OAuth grants end for good (docs/oauth.md); their live requests close on the event.
        if (disable) await endGrants(trx, { agentId: id }, nowIso(), { actorId: principal?.agentId ?? null, reason: 'agent-disabled' });
      }
      return set;
    });
    if (!result) throw notFound('Agent');
    // Also when it already was disabled: a node that missed the first event hears it again.
    await events.publish({ type: disable ? 'agent.disabled' : 'agent.enabled', agentId: id });
    return result.agent;
  };

  // An agent's name never changes and agents are never deleted: a name read once is right for good.
  const knownNames = new Map<string, string>();
  const KNOWN_NAMES_MAX = 10_000;

  return {
    async names(ids) {
      const names = new Map<string, string>();
      const missing: string[] = [];
      for (const id of new Set(ids)) {
        const known = knownNames.get(id);
        if (known === undefined) missing.push(id);
        else names.set(id, known);
      }
      for (const [id, name] of await findAgentNames(db, missing)) {
        if (knownNames.size >= KNOWN_NAMES_MAX) knownNames.delete(knownNames.keys().next().value as string);
        knownNames.set(id, name);
        names.set(id, name);
      }
      return names;
    },

    async resolveIds(refs) {
      // isUuid narrows its argument: asked as a plain boolean so a name stays a string.
      const byId = (ref: string): boolean => isUuid(ref);
      const names = refs.filter((ref) => !byId(ref)).map((ref) => ref.toLowerCase());
      const ids = await findAgentIdsByName(db, [...new Set(names)]);
      const givenIds = [...new Set(refs.filter(byId).map((ref) => ref.toLowerCase()))];
      const existing = givenIds.length === 0 ? new Set<string>() : await findExistingAgentIds(db, givenIds);
      const unknown = refs.filter((ref) => (byId(ref) ? !existing.has(ref.toLowerCase()) : !ids.has(ref.toLowerCase())));
      if (unknown.length > 0) throw agentsNotFound(unknown);
      return refs.map((ref) => (byId(ref) ? ref : (ids.get(ref.toLowerCase()) ?? ref)));
    },

    async create(principal, input) {
      authz.requireAdminWhenStrict(principal);
      const { name, displayName, role } = createAgentInput.parse(requireObject(input));
      const agent: Agent = { id: uuidv7(), name, displayName, role, createdAt: nowIso(), disabledAt: null, description: '', skills: [] };
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

    async update(principal, rawId, input) {
      const caller = authz.requireAgent(principal);
      const id = parseId(rawId, 'id');
      if (id !== caller.agentId) authz.requireAdmin(caller);
      const changes = parseChanges(input);
      const agent = await db.transaction().execute(async (trx) => {
        const updated = await updateAgent(trx, id, changes);
        if (updated) await recordAudit(trx, { event: 'agent-updated', actorId: caller.agentId, subjectId: id, detail: { fields: UPDATABLE.filter((f) => f in changes) } });
        return updated;
      });
      if (!agent) throw notFound('Agent');
      return agent;
    },

    get: (id) => findAgentById(db, id),
    disable: (principal, id) => setDisabled(principal, id, true),
    enable: (principal, id) => setDisabled(principal, id, false),
  };
}
