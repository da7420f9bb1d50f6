import { sql, type RawBuilder } from 'kysely';
import type { Dialect } from '../database-handle.js';

/** The only place where the two engines' column types differ. */
export interface ColumnTypes {
  uuid: 'uuid' | 'text';
  timestamp: 'timestamptz' | 'text';
  json: 'jsonb' | 'text';
  now: RawBuilder<unknown>;
}

export function columnTypes(dialect: Dialect): ColumnTypes {
  return dialect === 'postgres'
    ? { uuid: 'uuid', timestamp: 'timestamptz', json: 'jsonb', now: sql`now()` }
    : { uuid: 'text', timestamp: 'text', json: 'text', now: sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))` };
}
