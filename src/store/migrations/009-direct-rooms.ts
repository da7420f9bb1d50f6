import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from './column-types.js';

/**
 * Direct rooms (docs/protocol.md, Direct rooms): every room gets a `kind`, `group` for every
 * existing room. A direct room also carries `direct_key`, its two members' ids sorted and joined by
 * `:` (null for a group room); its unique index makes two racing opens of the same pair, on any
 * nodes, create one room: the loser's insert fails and it reads the winner's room.
 */
export function directRooms(_engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('rooms').addColumn('kind', 'text', (c) => c.notNull().defaultTo(sql.lit('group'))).execute();
      await db.schema.alterTable('rooms').addColumn('direct_key', 'text').execute();
      await db.schema.createIndex('rooms_direct_key').unique().on('rooms').column('direct_key').execute();
    },
  };
}
