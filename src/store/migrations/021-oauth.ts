import type { Kysely, Migration } from 'kysely';
import { columnTypes, type Engine } from './column-types.js';

/**
 * OAuth 2.1 for MCP clients (docs/oauth.md):
 * - `oauth_records`: what the authorization server keeps (registered clients, interactions,
 *   authorization codes, access and refresh tokens, grants), one row per record, keyed by a SHA-256
 *   of its kind and id, so a token's value is never stored, only its hash. `grant_id` ends a grant's
 *   tokens in one statement; `expires_at` (epoch ms) lets expired rows be deleted.
 * - `oauth_grants`: an agent's grants as the service lists them with the agent's tokens: the client,
 *   the scopes granted, the API token signed in with (revoking it ends the grant), last use.
 */
export function oauth(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('oauth_records')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('grant_id', 'text')
        .addColumn('uid', 'text')
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('consumed_at', 'bigint')
        .execute();
      await db.schema.createIndex('oauth_records_grant_idx').on('oauth_records').column('grant_id').execute();
      await db.schema.createIndex('oauth_records_uid_idx').on('oauth_records').column('uid').execute();
      await db.schema.createIndex('oauth_records_expires_idx').on('oauth_records').column('expires_at').execute();
      await db.schema
        .createTable('oauth_grants')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('grant_id', 'text', (c) => c.notNull().unique())
        .addColumn('agent_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('token_id', t.uuid, (c) => c.notNull().references('api_tokens.id'))
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('client_name', 'text', (c) => c.notNull())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addColumn('last_used_at', t.timestamp)
        .addColumn('revoked_at', t.timestamp)
        .execute();
      await db.schema.createIndex('oauth_grants_agent_idx').on('oauth_grants').columns(['agent_id', 'created_at']).execute();
      await db.schema.createIndex('oauth_grants_token_idx').on('oauth_grants').column('token_id').execute();
    },
  };
}
