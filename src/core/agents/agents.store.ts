import type { Kysely, Selectable, Transaction } from 'kysely';
import type { AgentsTable, DB } from '../../store/schema.js';
import { toIso } from '../../store/values.js';
import type { Role } from '../principal.js';

export interface Agent {
  id: string;
  name: string;
  displayName: string;
  role: Role;
  createdAt: string;
}

type Db = Kysely<DB> | Transaction<DB>;

const toAgent = (row: Selectable<AgentsTable>): Agent => ({
  id: row.id,
  name: row.name,
  displayName: row.display_name,
  role: row.role,
  createdAt: toIso(row.created_at),
});

export async function insertAgent(db: Db, agent: Agent): Promise<void> {
  await db
    .insertInto('agents')
    .values({ id: agent.id, name: agent.name, display_name: agent.displayName, role: agent.role, created_at: agent.createdAt })
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
