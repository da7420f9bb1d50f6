/** Conversions at the store boundary, where the two engines return different JS types. */

export function toIso(value: string | Date): string {
  return value instanceof Date ? value.toISOString() : new Date(value).toISOString();
}

export function toIsoOrNull(value: string | Date | null): string | null {
  return value === null ? null : toIso(value);
}

/** SQLite returns JSON columns as text, PostgreSQL (jsonb) as parsed values. */
export function fromJson(value: unknown): unknown {
  return typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
}

export const nowIso = (): string => new Date().toISOString();
