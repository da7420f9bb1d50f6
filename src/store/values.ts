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

// Date#toISOString costs ~0.6 us (V8 formats with snprintf) and every message takes two (its own
// time and its audit record's). Calls within one millisecond share the string; a second's
// `YYYY-MM-DDTHH:MM:SS.` is formatted once. The result is what toISOString returns (tested).
let lastMs = Number.NaN;
let lastIso = '';
let secondStart = Number.NaN;
let secondPrefix = '';

export function nowIso(): string {
  const ms = Date.now();
  if (ms === lastMs) return lastIso;
  const milli = ms % 1000;
  const second = ms - milli;
  if (second !== secondStart) {
    secondStart = second;
    secondPrefix = new Date(second).toISOString().slice(0, 20);
  }
  lastMs = ms;
  lastIso = `${secondPrefix}${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
  return lastIso;
}
