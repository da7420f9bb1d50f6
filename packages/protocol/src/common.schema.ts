import { Type, type TSchema } from '@sinclair/typebox';

/**
 * Building blocks of the objects the service returns (REST bodies, WebSocket payloads and
 * acknowledgements). They only describe: input is validated by the input schemas of each feature
 * (validation.ts `Text`, `Uuid`), output is what the services build. The OpenAPI and AsyncAPI
 * documents are generated from these objects and the conformance tests check real responses
 * against them.
 */

/** A UUID the service assigned (lowercase). */
export const IdString = (description?: string) => Type.String({ format: 'uuid', ...(description === undefined ? {} : { description }) });

/** ISO 8601 UTC with milliseconds, e.g. `2026-11-21T10:47:00.000Z`. */
export const Timestamp = (description?: string) =>
  Type.String({ format: 'date-time', examples: ['2026-11-21T10:47:00.000Z'], ...(description === undefined ? {} : { description }) });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const RoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('agent')], { description: 'admin or agent' });

/** Every REST error: `{error, details?}`; `details` is keyed by field for validation failures. */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Human-readable message' }),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Field name -> what is wrong with it (a string) for validation failures; a conflict\'s facts for some 409s (`assigneeId`, `conflicts`)' })),
  },
  { title: 'ErrorBody' },
);

type JsonNode = Record<string, unknown>;

/**
 * Rewrites a generated document (OpenAPI, AsyncAPI) in place so its schemas are plain JSON Schema.
 * validation.ts's `Text` kind counts code points and keeps its limits in keys of its own; JSON
 * Schema's `minLength` / `maxLength` count code points too, so the document states them in those words.
 */
export function standardiseText(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) standardiseText(item);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const schema = node as JsonNode;
  if ('minCodePoints' in schema || 'maxCodePoints' in schema || 'textPattern' in schema) {
    const { minCodePoints, maxCodePoints, textPattern } = schema;
    delete schema.minCodePoints;
    delete schema.maxCodePoints;
    delete schema.textPattern;
    if (typeof minCodePoints === 'number' && minCodePoints > 0) schema.minLength = minCodePoints;
    if (typeof maxCodePoints === 'number' && maxCodePoints < Number.MAX_SAFE_INTEGER) schema.maxLength = maxCodePoints;
    if (typeof textPattern === 'string') schema.pattern = textPattern;
  }
  for (const value of Object.values(schema)) standardiseText(value);
}
