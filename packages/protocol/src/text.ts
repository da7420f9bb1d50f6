import { Kind, Type, TypeRegistry, type SchemaOptions, type TUnsafe } from '@sinclair/typebox';

/**
 * The string rule every schema of the protocol uses: a custom TypeBox `Text` kind that counts
 * Unicode code points and refuses NUL and unpaired surrogates (both storage engines then behave
 * alike). Registered once, here, so the server's validators and any client that checks payloads
 * with TypeBox apply the same rule.
 */

export interface TextOptions extends SchemaOptions {
  minLength?: number;
  maxLength?: number;
  pattern?: string;
}

export interface TTextSchema extends TUnsafe<string> {
  minCodePoints: number;
  maxCodePoints: number;
  textPattern?: string;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What neither engine stores alike: a NUL character or an unpaired surrogate; null when there is none. */
export function storableTextProblem(value: string): 'nul' | 'lone-surrogate' | null {
  if (value.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(value)) return 'lone-surrogate';
  return null;
}

const patternCache = new Map<string, RegExp>();

/** Code points in a string (not UTF-16 units). */
export function codePointLength(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

/** What is wrong with a value for a `Text` schema, in words; null when nothing. */
export function textProblem(schema: TTextSchema, value: unknown): string | null {
  if (typeof value !== 'string') return 'must be a string';
  const unstorable = storableTextProblem(value);
  if (unstorable === 'nul') return 'must not contain NUL characters';
  if (unstorable === 'lone-surrogate') return 'must be valid Unicode (no unpaired surrogates)';
  // Well formed, so it has between half its UTF-16 length and all of it in code points: counting
  // them (an iterator step each) is needed only when those bounds do not settle both limits.
  const settled = value.length <= schema.maxCodePoints && Math.ceil(value.length / 2) >= schema.minCodePoints;
  const length = settled ? value.length : codePointLength(value);
  if (length < schema.minCodePoints) {
    return schema.minCodePoints === 1 ? 'must not be empty' : `must be at least ${schema.minCodePoints} characters`;
  }
  if (length > schema.maxCodePoints) return `must be at most ${schema.maxCodePoints} characters`;
  if (schema.textPattern !== undefined) {
    let re = patternCache.get(schema.textPattern);
    if (!re) patternCache.set(schema.textPattern, (re = new RegExp(schema.textPattern, 'u')));
    if (!re.test(value)) return `must match pattern ${schema.textPattern}`;
  }
  return null;
}

TypeRegistry.Set<TTextSchema>('Text', (schema, value) => textProblem(schema, value) === null);

/** A well-formed Unicode string, length counted in code points. */
export function Text(options: TextOptions = {}): TTextSchema {
  const { minLength = 0, maxLength = Number.MAX_SAFE_INTEGER, pattern, ...rest } = options;
  const schema = { ...rest, [Kind]: 'Text', type: 'string', minCodePoints: minLength, maxCodePoints: maxLength } as unknown as TTextSchema;
  if (pattern !== undefined) schema.textPattern = pattern;
  return schema;
}

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID_RE = new RegExp(UUID_PATTERN);
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_RE.test(value);
export const Uuid = (options: SchemaOptions = {}) => Text({ ...options, pattern: UUID_PATTERN, maxLength: 36 });


export { Type };
