import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Engine } from './column-types.js';
import { initialSchema } from './001-initial-schema.js';
import { partialClientMsgIdIndex } from './002-partial-client-msg-id-index.js';
import { agentDisabled } from './003-agent-disabled.js';
import { messageSeq } from './004-message-seq.js';
import { messageSearch } from './005-message-search.js';
import { webhooks } from './006-webhooks.js';
import { webhookClaims } from './007-webhook-claims.js';
import { tokenLastUsed } from './008-token-last-used.js';
import { directRooms } from './009-direct-rooms.js';
import { threadsAndEdits } from './010-threads-and-edits.js';
import { messageAttention } from './011-message-attention.js';
import { dataAndFiles } from './012-data-and-files.js';
import { tasks } from './013-tasks.js';
import { auditRead } from './014-audit-read.js';
import { agentProfile } from './015-agent-profile.js';
import { fileUsage } from './016-file-usage.js';
import { streamedMessages } from './017-streamed-messages.js';
import { acknowledgements } from './018-acknowledgements.js';
import { queuesAndLeases } from './019-queues-and-leases.js';
import { retention } from './020-retention.js';
import { oauth } from './021-oauth.js';

/**
 * Migrations are frozen history: numbered, registered here in order, written against
 * Kysely<unknown>, importing nothing outside this folder (not today's schema types, not the live
 * store/dialect.ts, not core/): what a migration needs is copied in, so that it does the same on
 * every database it meets, whatever the live code becomes. The engines' column types come from
 * column-types.ts; a migration whose DDL differs more branches on the engine itself.
 */
function migrations(engine: Engine): Record<string, Migration> {
  return {
    '001-initial-schema': initialSchema(engine),
    '002-partial-client-msg-id-index': partialClientMsgIdIndex,
    '003-agent-disabled': agentDisabled(engine),
    '004-message-seq': messageSeq,
    '005-message-search': messageSearch(engine),
    '006-webhooks': webhooks(engine),
    '007-webhook-claims': webhookClaims,
    '008-token-last-used': tokenLastUsed(engine),
    '009-direct-rooms': directRooms(engine),
    '010-threads-and-edits': threadsAndEdits(engine),
    '011-message-attention': messageAttention(engine),
    '012-data-and-files': dataAndFiles(engine),
    '013-tasks': tasks(engine),
    '014-audit-read': auditRead,
    '015-agent-profile': agentProfile(engine),
    '016-file-usage': fileUsage(engine),
    '017-streamed-messages': streamedMessages(engine),
    '018-acknowledgements': acknowledgements(engine),
    '019-queues-and-leases': queuesAndLeases(engine),
    '020-retention': retention,
    '021-oauth': oauth(engine),
  };
}

/** Names of all migrations, in order (for operators and tests). */
export const migrationNames = (engine: Engine): string[] => Object.keys(migrations(engine));

export async function migrateToLatest(db: Kysely<unknown>, engine: Engine): Promise<void> {
  const provider: MigrationProvider = { getMigrations: () => Promise.resolve(migrations(engine)) };
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const cause = error instanceof Error ? error.message : String(error ?? 'unknown error');
    throw new Error(`database migration${failed ? ` ${failed.migrationName}` : ''} failed: ${cause}`);
  }
}
