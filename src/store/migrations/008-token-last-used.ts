import type { Kysely, Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * When each API token was last exchanged for a session, to the minute (docs/scopes.md, listing an
 * agent's tokens): null until then. Existing tokens start null. Read with the token by prefix or by
 * agent, so it needs no index.
 */
export function tokenLastUsed(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('api_tokens').addColumn('last_used_at', t.timestamp).execute();
    },
  };
}
