import { Agent } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { createTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';
import { rawRequest } from '../helpers/raw-http.js';

/**
 * Hostile search queries (docs/search.md: punctuation, unbalanced quotes, `:`, `(`, `^`, SQL
 * never cause an error or a 5xx): arbitrary text full of FTS5 and tsquery syntax, SQL, NUL, lone
 * surrogates and invalid UTF-8, on SQLite and on PostgreSQL. The only answers are 200 with a page
 * or 400 with details. AMS_FUZZ_RUNS sets the number of cases per engine.
 */
const withPostgres = await servicesAvailable('search fuzzing on PostgreSQL', ['postgres']);
const dialects = withPostgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
const RUNS = Number(process.env.AMS_FUZZ_RUNS ?? (process.env.AMS_LONG === '1' ? 5000 : 400));

const SYNTAX = [
  '"', '""', '*', '-', '+', '^', ':', '(', ')', '{', '}', '[', ']', '&', '|', '!', '<->', '<2>', ':*', ':A', '\\', "'", "''", '%', '_', ';', '--', '/*', '*/',
  'AND', 'OR', 'NOT', 'NEAR', 'NEAR(', 'NEAR/2', 'MATCH', 'message_search', 'words:', 'rowid', '{words}', 'col:',
  "' OR 1=1 --", '"; DROP TABLE messages; --', "'); select pg_sleep(10); --", 'union select * from agents', '\u0000', '\ud800', '\udfff', '\ufeff', '\u0301', '\u200b', '\u00a0',
  'café', 'ÉCOLE', 'ﬁ', '①', '日本', '🚀', 'deploy', 'build', 'x'.repeat(300),
];
const piece = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SYNTAX) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(' ', '  ', '\t', '\n') },
);
const hostileText = fc.array(piece, { maxLength: 12 }).map((parts) => parts.join(''));

/** Percent-encodes the UTF-8 bytes of a string (a lone surrogate becomes U+FFFD's bytes). */
const encodeText = (text: string): string => [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
const rawBytes = fc.uint8Array({ maxLength: 24 }).map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''));
const encodedQ = fc.oneof(
  { weight: 6, arbitrary: hostileText.map(encodeText) },
  { weight: 1, arbitrary: rawBytes },
  { weight: 1, arbitrary: fc.constantFrom('%ED%A0%80', '%00', '%C0%80', '%FF%FE', 'deploy%ED%B0%80', '%', '%zz', '+', '%2B') },
);

interface Fixtures {
  server: TestServer;
  http: Agent;
  jwts: string[];
  roomId: string;
  messageId: string;
}

describe.each(dialects)('search fuzzing on %s', (dialect) => {
  let f: Fixtures;

  beforeAll(async () => {
    const server = await startTestServer({ db: await createTestDatabase(dialect) });
    const api = new Api(server.url);
    const admin: TestAgent = await newAdmin(api);
    const member = await newAgent(api);
    const room = await newRoom(api, admin, [member]);
    let messageId = '';
    for (const body of ['deploy the café build', 'NEAR(a b) AND "quoted" OR NOT', 'user@example.com v2.0 日本 🚀']) {
      messageId = (await sendMessage(api, member, room.id, body)).id;
    }
    f = { server, http: new Agent({ keepAlive: true, maxSockets: 4 }), jwts: [member.jwt, admin.jwt], roomId: room.id, messageId };
  });
  afterAll(async () => {
    f?.http.destroy();
    await f?.server.close();
  });

  it('answers 200 with a page or 400 with details, whatever q holds', async () => {
    const extra = fc.oneof(
      fc.constant(''),
      fc.constant(null).map(() => `&roomId=${f.roomId}`),
      fc.constant(null).map(() => `&before=${f.messageId}`),
      fc.constantFrom('&limit=1', '&limit=100', '&limit=0', '&limit=x', '&roomId=x', '&before=%00', '&q=second'),
      encodedQ.map((q) => `&roomId=${q}`),
    );
    const request = fc.record({ q: encodedQ, extra, jwt: fc.nat({ max: 1 }) });
    let ok = 0;
    await fc.assert(
      fc.asyncProperty(request, async ({ q, extra: more, jwt }) => {
        const path = `/api/v1/search/messages?q=${q}${more}`;
        const res = await rawRequest(f.server.url, f.http, { method: 'GET', path, headers: { authorization: `Bearer ${f.jwts[jwt]!}` } });
        const where = `${path} -> ${res.status} ${res.text.slice(0, 300)}`;
        expect([200, 400], where).toContain(res.status);
        const body = JSON.parse(res.text) as Record<string, unknown>;
        if (res.status === 200) {
          ok++;
          expect(Array.isArray(body.results), where).toBe(true);
          expect(typeof body.hasMore, where).toBe('boolean');
          expect(body.nextCursor === null || typeof body.nextCursor === 'string', where).toBe(true);
        } else {
          expect(typeof body.error, where).toBe('string');
          const details = body.details as Record<string, unknown>;
          expect(Object.values(details).every((v) => typeof v === 'string'), where).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
    // The generator reaches the engines, not only validation.
    expect(ok).toBeGreaterThan(RUNS / 10);
  });
});
