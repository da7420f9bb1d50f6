import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { isUuid, textProblem, type TTextSchema } from '@agent-messaging/protocol';
import { validationError, type ErrorDetails } from '../errors.js';

/**
 * Shared validation for REST and WebSocket: TypeBox schemas compiled once, with field-keyed,
 * human-readable details. Strings are checked by the protocol's `Text` kind (code points, no NUL,
 * no unpaired surrogates), whose rule the protocol package registers with TypeBox.
 */

export { Text, Uuid, isUuid, codePointLength, storableTextProblem, type TextOptions, type TTextSchema } from '@agent-messaging/protocol';

const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;
/**
 * An ISO 8601 date-time with a zone; returns null when it is not one. Every field must exist on the
 * calendar and the clock: Date would roll 2027-02-30 over to 2027-03-02 and 24:00 to the next day.
 */
export function parseTimestamp(value: string): Date | null {
  const match = ISO_TIMESTAMP.exec(value);
  if (!match) return null;
  const field = (i: number): number => Number(match[i] ?? 0);
  const [year, month, day, hour, minute, second] = [field(1), field(2), field(3), field(4), field(5), field(6)];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const daysInMonth = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  const onCalendar = month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth;
  const onClock = hour <= 23 && minute <= 59 && second <= 59 && field(8) <= 23 && field(9) <= 59;
  if (!onCalendar || !onClock) return null;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return null;
  // Years 1..9999 only, in UTC too: both engines store those alike (PostgreSQL refuses year 0).
  const utcYear = date.getUTCFullYear();
  return utcYear >= 1 && utcYear <= 9999 ? date : null;
}

function messageFor(error: ValueError): string {
  const schema = error.schema as Partial<TTextSchema> & TSchema;
  // A missing property is reported with the property's own schema: say "required", not "must be a string".
  if (error.type === ValueErrorType.ObjectRequiredProperty) return 'is required';
  if (schema[Kind] === 'Text') return textProblem(schema as TTextSchema, error.value) ?? 'is invalid';
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return 'is not an allowed field';
    case ValueErrorType.Union:
    case ValueErrorType.Literal:
      if (Array.isArray(schema.anyOf)) {
        const allowed = (schema.anyOf as TSchema[]).map((s) => JSON.stringify(s.const)).join(', ');
        return `must be one of ${allowed}`;
      }
      return `must be ${JSON.stringify(schema.const)}`;
    case ValueErrorType.Integer:
      return 'must be a whole number';
    case ValueErrorType.Number:
      return 'must be a number';
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return `must be at least ${String(schema.minimum)}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${String(schema.maximum)}`;
    case ValueErrorType.Array:
      return 'must be an array';
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${String(schema.maxItems)} items`;
    case ValueErrorType.ArrayMinItems:
      return `must have at least ${String(schema.minItems)} items`;
    case ValueErrorType.Object:
      return 'must be an object';
    case ValueErrorType.Boolean:
      return 'must be a boolean';
    case ValueErrorType.String:
      return 'must be a string';
    default:
      return error.message;
  }
}

/** "/members/2" -> "members[2]", "/skills/0/id" -> "skills[0].id"; the root is "body". */
function pathOf(path: string): string {
  const parts = path.split('/').filter((p) => p !== '');
  if (parts.length === 0) return 'body';
  return parts.map((p, i) => (/^\d+$/.test(p) && i > 0 ? `[${p}]` : (i > 0 ? '.' : '') + p)).join('');
}

/**
 * The request's field a detail is keyed by: the path up to its first array item ("members[2]" ->
 * "members", "skills[0].id" -> "skills", "scopes.actions[1]" -> "scopes.actions"), so a client finds
 * a bad item under the field it sent; the message names the item.
 */
function fieldOf(path: string): string {
  const bracket = path.indexOf('[');
  return bracket > 0 ? path.slice(0, bracket) : path;
}

export interface Validator<T extends TSchema> {
  check: TypeCheck<T>;
  /** Returns the value typed, or throws a VALIDATION_ERROR with details keyed by field. */
  parse(value: unknown): Static<T>;
}

export function compile<T extends TSchema>(schema: T): Validator<T> {
  const check = TypeCompiler.Compile(schema);
  return {
    check,
    parse(value: unknown): Static<T> {
      if (check.Check(value)) return value;
      const details: ErrorDetails = {};
      for (const error of check.Errors(value)) {
        const path = pathOf(error.path);
        const field = fieldOf(path);
        if (details[field] === undefined) details[field] = path === field ? messageFor(error) : `${path}: ${messageFor(error)}`;
      }
      if (Object.keys(details).length === 0) details.body = 'is invalid';
      throw validationError(details);
    },
  };
}

/** A JSON object body; anything else (array, null, string) is a validation error for "body". */
export function requireObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw validationError({ body: 'must be a JSON object' });
  }
  return value as Record<string, unknown>;
}

export { Type };

/**
 * A UUID from a path, query or payload, lowercased so SQLite (text) compares like PostgreSQL (uuid).
 * Throws a VALIDATION_ERROR naming the field otherwise.
 */
export function parseId(value: unknown, field: string): string {
  if (!isUuid(value)) throw validationError({ [field]: 'must be a UUID' });
  return value.toLowerCase();
}

/**
 * A sequence number from a query string (digits) or a JSON payload (a number): a whole number >= 0.
 * Numbers past 2^53 cannot be a `seq` the service gave out, and are refused rather than rounded.
 */
export function parseSeq(raw: unknown, field: string): number {
  const value = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : raw;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw validationError({ [field]: 'must be a whole number >= 0' });
  }
  return value;
}
