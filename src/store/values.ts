/** Conversions at the store boundary, where the two engines return different JS types. */

// What the service writes (Date#toISOString): returned as is, without a parse and a format per row.
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function toIso(value: string | Date): string {
  if (typeof value === 'string') return value.length === 24 && CANONICAL_ISO.test(value) ? value : new Date(value).toISOString();
  return value.toISOString();
}

export function toIsoOrNull(value: string | Date | null): string | null {
  return value === null ? null : toIso(value);
}

/** SQLite returns JSON columns as text, PostgreSQL (jsonb) as parsed values. */
export function fromJson(value: unknown): unknown {
  return typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
}

export const nowIso = (): string => new Date().toISOString();
