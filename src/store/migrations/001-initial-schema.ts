import { sql, type Kysely, type Migration } from 'kysely';
import { v7 as uuidv7 } from 'uuid';
import { columnTypes, type Engine } from './column-types.js';

export function initialSchema(engine: Engine): Migration {
  const t = columnTypes(engine);
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('service_settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('agents')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull().check(sql`role in ('admin', 'agent')`))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('api_tokens')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('agent_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('prefix', 'text', (c) => c.notNull().unique())
        .addColumn('secret_hash', 'text', (c) => c.notNull())
        .addColumn('scopes', t.json, (c) => c.notNull())
        .addColumn('expires_at', t.timestamp)
        .addColumn('revoked_at', t.timestamp)
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('api_tokens_agent_idx').on('api_tokens').column('agent_id').execute();

      await db.schema
        .createTable('rooms')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_by', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('room_members')
        .addColumn('room_id', t.uuid, (c) => c.notNull().references('rooms.id'))
        .addColumn('agent_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('joined_at', t.timestamp, (c) => c.notNull())
        .addPrimaryKeyConstraint('room_members_pk', ['room_id', 'agent_id'])
        .execute();
      await db.schema.createIndex('room_members_agent_idx').on('room_members').column('agent_id').execute();

      await db.schema
        .createTable('messages')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('room_id', t.uuid, (c) => c.notNull().references('rooms.id'))
        .addColumn('sender_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('mentions', t.json)
        .addColumn('reply_to', t.uuid)
        .addColumn('client_msg_id', 'text')
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();
      // History pages: newest first within a room, keyset on the time-ordered id.
      await db.schema.createIndex('messages_room_id_idx').on('messages').columns(['room_id', 'id']).execute();
      // Idempotent sends: one message per (room, sender, clientMsgId); NULLs never collide.
      await db.schema
        .createIndex('messages_client_msg_id_uq')
        .on('messages')
        .columns(['room_id', 'sender_id', 'client_msg_id'])
        .unique()
        .execute();

      await db.schema
        .createTable('audit_log')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('event', 'text', (c) => c.notNull())
        .addColumn('actor_id', t.uuid)
        .addColumn('subject_id', 'text')
        .addColumn('detail', t.json, (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('audit_log_event_idx').on('audit_log').columns(['event', 'id']).execute();

      await db.schema
        .createTable('social_channels')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('social_posts')
        .addColumn('id', t.uuid, (c) => c.primaryKey())
        .addColumn('channel_id', t.uuid, (c) => c.notNull().references('social_channels.id'))
        .addColumn('author_agent_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('parent_post_id', t.uuid, (c) => c.references('social_posts.id'))
        .addColumn('reply_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .execute();
      // Feed (all channels) and channel pages list top-level posts only, newest first.
      await db.schema
        .createIndex('social_posts_feed_idx')
        .on('social_posts')
        .column('id')
        .where(sql.ref('parent_post_id'), 'is', null)
        .execute();
      await db.schema
        .createIndex('social_posts_channel_idx')
        .on('social_posts')
        .columns(['channel_id', 'id'])
        .where(sql.ref('parent_post_id'), 'is', null)
        .execute();
      await db.schema.createIndex('social_posts_thread_idx').on('social_posts').columns(['parent_post_id', 'id']).execute();

      await db.schema
        .createTable('social_reactions')
        .addColumn('post_id', t.uuid, (c) => c.notNull().references('social_posts.id'))
        .addColumn('agent_id', t.uuid, (c) => c.notNull().references('agents.id'))
        .addColumn('emoji', 'text', (c) => c.notNull().check(sql`emoji in ('👍', '🤔', '💡')`))
        .addColumn('created_at', t.timestamp, (c) => c.notNull())
        .addPrimaryKeyConstraint('social_reactions_pk', ['post_id', 'agent_id', 'emoji'])
        .execute();

      // A fresh install has one channel, "general".
      await db
        .insertInto('social_channels' as never)
        .values({ id: uuidv7(), slug: 'general', name: 'General', created_at: new Date().toISOString() } as never)
        .execute();
    },
  };
}
