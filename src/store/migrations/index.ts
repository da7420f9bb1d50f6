import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Dialect } from '../database-handle.js';
import { initialSchema } from './001-initial-schema.js';
import { partialClientMsgIdIndex } from './002-partial-client-msg-id-index.js';
import { agentDisabled } from './003-agent-disabled.js';
import { messageSeq } from './004-message-seq.js';
import { messageSearch } from './005-message-search.js';
import { webhooks } from './006-webhooks.js';
import { tokenLastUsed } from './007-token-last-used.js';

/**
 * Migrations are frozen history: numbered, registered here in order, written against
 * Kysely<unknown>. The few dialect differences live in column-types.ts.
 */
function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '001-initial-schema': initialSchema(dialect),
    '002-partial-client-msg-id-index': partialClientMsgIdIndex,
    '003-agent-disabled': agentDisabled(dialect),
    '004-message-seq': messageSeq,
    '005-message-search': messageSearch(dialect),
    '006-webhooks': webhooks(dialect),
    '007-token-last-used': tokenLastUsed(dialect),
  };
}

/** Names of all migrations, in order (for operators and tests). */
export const migrationNames = (dialect: Dialect): string[] => Object.keys(migrations(dialect));

export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const provider: MigrationProvider = { getMigrations: () => Promise.resolve(migrations(dialect)) };
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const cause = error instanceof Error ? error.message : String(error ?? 'unknown error');
    throw new Error(`database migration${failed ? ` ${failed.migrationName}` : ''} failed: ${cause}`);
  }
}
