import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * What an agent says of itself (docs/protocol.md, Agent profiles): a description ("" until set)
 * and its skills, a JSON array of {id, name, description, tags} ([] until set). Existing agents
 * start with neither. Read with the agent's row, so no index.
 */
export function agentProfile(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('agents').addColumn('description', 'text', (c) => c.notNull().defaultTo(sql.lit(''))).execute();
      await db.schema.alterTable('agents').addColumn('skills', t.json, (c) => c.notNull().defaultTo(sql.lit('[]'))).execute();
    },
  };
}
