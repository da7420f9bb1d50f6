import type { Kysely, Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Disabled agents (docs/protocol.md, Disabled agents): when an agent was disabled, null while it is active. Every
 * existing agent stays active. Authentication reads it by primary key, so it needs no index.
 */
export function agentDisabled(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('agents').addColumn('disabled_at', t.timestamp).execute();
    },
  };
}
