import type { Selectable } from 'kysely';
import { prepared } from '../../store/prepared.js';
import type { AgentsTable, Db } from '../../store/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../store/values.js';
import type { Role } from '../principal.js';

export interface Agent {
  id: string;
  name: string;
  displayName: string;
  role: Role;
  createdAt: string;
  /** When the agent was disabled; null while it is active (docs/protocol.md, Disabled agents). */
  disabledAt: string | null;
  /** What the agent says of itself (docs/protocol.md, Agent profiles): "" until set. */
  description: string;
  skills: Skill[];
}

export interface Skill {
  id: string;
  name: string;
  description: string;
  tags: string[];
}

/** The fields an update may change: each given one replaces the stored value. */
export interface AgentChanges {
  displayName?: string;
  description?: string;
  skills?: Skill[];
}

const toAgent = (row: Selectable<AgentsTable>): Agent => ({
  id: row.id,
  name: row.name,
  displayName: row.display_name,
  role: row.role,
  createdAt: toIso(row.created_at),
  disabledAt: toIsoOrNull(row.disabled_at),
  description: row.description,
  skills: fromJson(row.skills) as Skill[],
});

export async function insertAgent(db: Db, agent: Agent): Promise<void> {
  await db
    .insertInto('agents')
    .values({
      id: agent.id, name: agent.name, display_name: agent.displayName, role: agent.role, created_at: agent.createdAt, disabled_at: agent.disabledAt,
      description: agent.description, skills: JSON.stringify(agent.skills),
    })
    .execute();
}

export async function findAgentById(db: Db, id: string): Promise<Agent | null> {
  const row = await db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toAgent(row) : null;
}

export async function listAgents(db: Db, role?: Role): Promise<Agent[]> {
  let query = db.selectFrom('agents').selectAll().orderBy('id');
  if (role !== undefined) query = query.where('role', '=', role);
  return (await query.execute()).map(toAgent);
}

export async function findExistingAgentIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('agents').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

/** id -> name of the agents that exist among `ids`. */
export async function findAgentNames(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('agents').select(['id', 'name']).where('id', 'in', [...ids]).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** name -> id of the agents that exist among `names`. */
export async function findAgentIdsByName(db: Db, names: readonly string[]): Promise<Map<string, string>> {
  if (names.length === 0) return new Map();
  const rows = await db.selectFrom('agents').select(['id', 'name']).where('name', 'in', [...names]).execute();
  return new Map(rows.map((r) => [r.name, r.id]));
}

export type AgentStatus = 'active' | 'disabled' | 'unknown';

// Compiled once: authentication runs it whenever its per-node cache has no answer.
const agentStatusQuery = prepared((db, p: { id: string }) => db.selectFrom('agents').select('disabled_at').where('id', '=', p.id));

/** Whether the agent exists and is active: a primary-key lookup (authentication). */
export async function agentStatus(db: Db, id: string): Promise<AgentStatus> {
  const row = (await agentStatusQuery(db, { id })).rows[0];
  if (row === undefined) return 'unknown';
  return row.disabled_at === null ? 'active' : 'disabled';
}

/**
 * Sets when the agent was disabled (null: enables it), unless it already is in that state. Returns
 * the agent and whether it changed, or null when there is no such agent.
 */
export async function setAgentDisabledAt(db: Db, id: string, at: string | null): Promise<{ agent: Agent; changed: boolean } | null> {
  const updated = await db
    .updateTable('agents')
    .set({ disabled_at: at })
    .where('id', '=', id)
    .where('disabled_at', at === null ? 'is not' : 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (updated) return { agent: toAgent(updated), changed: true };
  const agent = await findAgentById(db, id);
  return agent ? { agent, changed: false } : null;
}

/** Applies `changes` to the agent; its new state, or null when there is no such agent. */
export async function updateAgent(db: Db, id: string, changes: AgentChanges): Promise<Agent | null> {
  const updated = await db
    .updateTable('agents')
    .set({
      ...(changes.displayName === undefined ? {} : { display_name: changes.displayName }),
      ...(changes.description === undefined ? {} : { description: changes.description }),
      ...(changes.skills === undefined ? {} : { skills: JSON.stringify(changes.skills) }),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
  return updated ? toAgent(updated) : null;
}
