import { sql, type Kysely, type Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * Each agent's stored bytes, for the storage quota (docs/files.md, FILE_QUOTA_BYTES): one row per
 * uploader, raised chunk by chunk as an upload is written (a conditional update, so parallel
 * uploads cannot pass the quota together) and lowered when a file is deleted. `files.size` counts
 * an upload's bytes as they are written, so a deleted incomplete upload gives back what it took.
 * Existing files start the count.
 */
export function fileUsage(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('file_usage')
        .addColumn('agent_id', t.uuid, (c) => c.primaryKey())
        .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
      await sql`insert into file_usage (agent_id, bytes) select uploader_id, sum(size) from files group by uploader_id`.execute(db);
    },
  };
}
