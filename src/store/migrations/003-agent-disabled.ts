import type { Kysely, Migration } from 'kysely';
import type { Dialect } from '../database-handle.js';
import { columnTypes } from './column-types.js';

/**
 * Disabled agents (docs/protocol.md, Disabled agents): when an agent was disabled, null while it is active. Every
 * existing agent stays active. Authentication reads it by primary key, so it needs no index.
 */
export function agentDisabled(dialect: Dialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('agents').addColumn('disabled_at', t.timestamp).execute();
    },
  };
}
