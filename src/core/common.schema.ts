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
    details: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Field name -> what is wrong with it' })),
  },
  { title: 'ErrorBody' },
);
