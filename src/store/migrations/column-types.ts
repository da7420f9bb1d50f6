/**
 * The migrations' own view of the two engines, frozen with them: they never import the live store
 * (store/dialect.ts, schema.ts, core/), which may change, while a migration that ran once must do
 * the same on every database it meets later.
 */
export type Engine = 'sqlite' | 'postgres';

/** The column types that differ between the engines (the rest are written alike: text, integer, bigint). */
export interface ColumnTypes {
  uuid: 'uuid' | 'text';
  timestamp: 'timestamptz' | 'text';
  json: 'jsonb' | 'text';
  bytes: 'bytea' | 'blob';
}

export function columnTypes(engine: Engine): ColumnTypes {
  return engine === 'postgres' ? { uuid: 'uuid', timestamp: 'timestamptz', json: 'jsonb', bytes: 'bytea' }
    : { uuid: 'text', timestamp: 'text', json: 'text', bytes: 'blob' };
}
