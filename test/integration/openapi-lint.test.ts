import spectralCore, { type RulesetDefinition } from '@stoplight/spectral-core';
import { oas } from '@stoplight/spectral-rulesets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nameSchemas } from '../../src/http/openapi.js';
import { Api } from '../helpers/api.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * docs/architecture.md ("What /openapi.json says of it"): /openapi.json passes Spectral's `spectral:oas` ruleset
 * with no finding at all (errors, warnings, hints), names the service's types as components (what
 * code generators turn into `Message`, `Room`, `Agent` types), and says where the API is served.
 */

// Spectral is CommonJS: its named classes arrive under the default export.
const { Spectral } = spectralCore;
// spectral:oas as its package declares it: an object literal whose inferred type TypeScript does not
// match to RulesetDefinition's union, though it is one (Spectral's own CLI loads it as such).
const SPECTRAL_OAS = oas as unknown as RulesetDefinition;

type Json = Record<string, unknown>;
interface OpenApiDocument {
  servers?: { url: string }[];
  paths: Record<string, Record<string, { description?: string; responses: Record<string, { content?: Record<string, { schema: Json }> }> }>>;
  components: { schemas: Record<string, Json> };
}

describe('/openapi.json lint and names', () => {
  let server: TestServer;
  let document: OpenApiDocument;

  beforeAll(async () => {
    server = await startTestServer();
    const res = await new Api(server.url).get('/openapi.json');
    expect(res.status).toBe(200);
    document = res.body as OpenApiDocument;
  });
  afterAll(() => server.close());

  it('passes Spectral\'s spectral:oas ruleset with no finding', async () => {
    const spectral = new Spectral();
    spectral.setRuleset(SPECTRAL_OAS);
    const results = await spectral.run(JSON.stringify(document));
    expect(results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`)).toEqual([]);
    // The ruleset is live: the same document without servers is reported.
    const { servers: _servers, ...withoutServers } = document;
    expect((await spectral.run(JSON.stringify(withoutServers))).map((r) => r.code)).toEqual(['oas3-api-servers']);
  });

  it('has servers and a description for every operation', () => {
    expect(document.servers?.length).toBeGreaterThan(0);
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        expect(operation.description?.length, `${method} ${path}`).toBeGreaterThan(20);
      }
    }
  });

  it('names the service\'s types as components and refers to them', () => {
    const schemas = document.components.schemas;
    for (const name of ['Message', 'Room', 'Agent', 'Post', 'ErrorBody', 'HistoryPage', 'InboxPage']) {
      expect(schemas[name]?.title, name).toBe(name);
    }
    const sent = document.paths['/api/v1/rooms/{id}/messages']!.post!.responses['201']!.content!['application/json']!.schema;
    expect(sent).toEqual({ $ref: '#/components/schemas/Message' });
    // Inside a component, a named type is a reference too (a page's items are Messages).
    expect(JSON.stringify(schemas.HistoryPage)).toContain('"$ref":"#/components/schemas/Message"');
    // No type is written out twice.
    const inline = JSON.stringify(document.paths).match(/"title":/g) ?? [];
    expect(inline).toEqual([]);
  });

  it('refuses two different schemas with one title (one would be described wrongly)', () => {
    const twice = (schema: Json): Json => ({ responses: { 200: { description: 'x', content: { 'application/json': { schema } } } } });
    const clash = {
      paths: {
        '/a': { get: twice({ title: 'Thing', type: 'string' }) },
        '/b': { get: twice({ title: 'Thing', type: 'integer' }) },
      },
    };
    expect(() => nameSchemas(clash)).toThrow(/two different schemas are titled "Thing"/);
  });
});
