/**
 * A documented JSON Schema with every object closed (`additionalProperties: false` where the schema
 * does not say otherwise), so a field the server sends but the document does not name fails a
 * conformance check too.
 */
export function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === 'properties' || key === 'patternProperties'
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, closed(v)]))
      : closed(value);
  }
  if (out.type === 'object' && out.properties !== undefined && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}
