import { beforeAll, describe, expect, it } from 'vitest';
import { newAdmin, type TestAgent } from '../helpers/api.js';
import { registeredRoutes } from '../helpers/routes.js';
import { useTestServer } from '../helpers/suite.js';

/**
 * A path id that is not a UUID is a client's mistake on every route (docs/protocol.md): 400
 * VALIDATION_ERROR naming the parameter, never a 404 that reads like "no such thing". The routes
 * are read from the server itself, so a route added later is walked too.
 */

/**
 * Path parameters that are not UUIDs: an A2A agent's name, an API token's prefix, a channel's id or
 * slug, the company's configured id (the directory's).
 */
// `:uid`: the OAuth library's interaction and resume ids (docs/oauth.md), not UUIDs.
const NOT_IDS = new Set([':agent', ':prefix', ':channelId', ':companyId', ':uid']);

const isDocument = (route: string): boolean => /^GET \/(openapi\.json|asyncapi\.json|docs|console)/.test(route);

describe('a path id that is not a UUID', () => {
  const t = useTestServer();
  let admin: TestAgent;

  beforeAll(async () => {
    admin = await newAdmin(t.api);
  });

  it('is 400 with details on every route that takes an id, before any lookup (no 404)', async () => {
    const routes = registeredRoutes(t.server.app.http.printRoutes({ commonPrefix: false })).filter((r) => !isDocument(r));
    const withIds = routes.filter((route) => route.split(' ')[1]!.split('/').some((segment) => segment.startsWith(':') && !NOT_IDS.has(segment)));
    expect(withIds.length).toBeGreaterThan(20);
    const wrong: string[] = [];
    for (const route of withIds) {
      const [method, pattern] = route.split(' ') as [string, string];
      // Every id parameter but one stays a well-formed UUID, so the answer is about the bad one.
      const ids = pattern.split('/').filter((segment) => segment.startsWith(':') && !NOT_IDS.has(segment));
      for (const bad of ids) {
        const path = pattern.split('/').map((segment) => {
          if (!segment.startsWith(':')) return segment;
          if (NOT_IDS.has(segment)) return 'general';
          return segment === bad ? 'not-a-uuid' : '0190c3f5-0000-7000-8000-000000000000';
        }).join('/');
        const body = ['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined;
        const res = await t.api.request(method, path, { ...(body === undefined ? {} : { body }), jwt: admin.jwt });
        // The parameter is named by its field (`roomId` where the path says `:id`), or the body's
        // shape is refused first: 400 either way, never a lookup's 404.
        if (res.status !== 400 || res.body?.error === undefined || typeof res.body?.details !== 'object') {
          wrong.push(`${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 120)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
