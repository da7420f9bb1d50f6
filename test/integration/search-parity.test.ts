import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSearchQuery, type SearchTerm } from '../../src/core/search/search-query.js';
import { searchWords } from '../../src/core/search-text.js';
import { AppError } from '../../src/errors.js';
import { Api, newAdmin, newAgent, newRoom, sendMessage, type TestAgent } from '../helpers/api.js';
import { createTestDatabase, startTestServer, type TestServer } from '../helpers/server.js';
import { servicesAvailable } from '../helpers/services.js';

/**
 * SQLite FTS5 and PostgreSQL give the same results for the same data (docs/search.md): one
 * corpus sent to a server on each engine, the same queries against both, and both compared with a
 * reference written here in plain JavaScript (the words of each body; every term of the query
 * matched as the query language says). Fixed queries, then generated ones.
 */
const withPostgres = await servicesAvailable('search parity on PostgreSQL', ['postgres']);
const dialects = withPostgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
const RUNS = Number(process.env.AMS_FUZZ_RUNS ?? 150);

const LONG_WORD = 'x'.repeat(230);
const CORPUS = [
  'Deploy the café build tonight',
  'DEPLOYMENT of the CAFE failed; deploy again?',
  'Write to user@example.com or admin@example.org',
  'Release v2.0 and v2.1-beta, not v20',
  'naïve coöperation résumé façade',
  'Straße STRASSE strasse ẞ',
  'İstanbul istanbul ISTANBUL ıstanbul',
  'ﬁnance ＦＵＬＬＷＩＤＴＨ ½ x² ①',
  '日本語のテキスト 東京 検索',
  '中文 搜索 测试 中文',
  'Ελληνικά κείμενο ΚΕΊΜΕΝΟ',
  'Русский текст ТЕКСТ ёлка Ёлка',
  'עברית טקסט',
  'العربية نص',
  'हिन्दी पाठ',
  'emoji 🚀 launch 🎉 party',
  'AND OR NOT NEAR are words',
  'path/to/file.txt and C:\\dir\\file',
  'SELECT * FROM messages; DROP TABLE messages; --',
  'quotes "inside" the \'body\' `ticks`',
  'a b c a b c a b',
  'release notes then release the build',
  'build the release notes',
  'zero\u200bwidth joiner\u200d and nbsp\u00a0space',
  'combining e\u0301 and e\u0300 and ñ',
  `${LONG_WORD}tail and ${LONG_WORD}`,
  '12345 0042 3.14159 1e10 0x1f',
  'snake_case kebab-case CamelCase dot.case',
  'dup dup dup dup',
  '!!! ??? ...',
];

const FIXED_QUERIES = [
  'deploy', 'DEPLOY', 'deploy*', 'cafe', 'CAFÉ', 'café deploy', 'user@example.com', 'example', 'example.org', 'v2', 'v2.0', 'v2*', 'v20', 'beta',
  'naive', 'cooperation', 'resume facade', 'strasse', 'straße', 'ss', 'istanbul', 'İstanbul', 'ıstanbul', 'finance', 'fullwidth', 'ＦＵＬＬ*', 'x2', '2', '1',
  '日本語のテキスト', '東京', '検*', '中文', '测试 搜索', 'ελληνικα', 'κειμενο', 'текст', 'елка', 'ёлка', 'טקסט', 'نص', 'पाठ', 'launch', '🚀 launch', 'party',
  'AND', 'OR NOT', 'NEAR', '"or not near"', 'path to file txt', 'file', 'dir', 'select from', 'drop table', '"drop table messages"', 'inside', 'body', 'ticks',
  '"a b c"', '"c a b"', '"b a"', '"release notes"', '"release the build"', '"build the"', 'release -notes', 'release -"release notes"', 'build -rel*', 'release -"the build"',
  'zero', 'width', 'zerowidth', 'joiner', 'nbsp space', 'e', 'n', 'combining', LONG_WORD, `${LONG_WORD}tail`, 'x*', '12345', '0042', '42', '3 14159', '1e10', '0x1f',
  'snake', 'case', 'kebab case', 'camelcase', 'dot', 'dup', '"dup dup dup"', '"dup dup dup dup dup"', 'dup -dup', '"unbalanced quote', 'NEAR(deploy tonight)', 'deploy:*',
  '(deploy)', '^deploy', 'deploy AND tonight', 'deploy OR tonight', '-deploy tonight', 'tonight -deploy', 'de*', 'd*', '*', '""', '-', '!!!', '-"a b" c',
];

interface Oracle {
  status: 200 | 400;
  /** Corpus indexes, newest first. */
  indexes: number[];
}

function termMatches(words: string[], term: SearchTerm): boolean {
  const [first] = term.words;
  if (term.words.length === 1) return term.prefix ? words.some((w) => w.startsWith(first!)) : words.includes(first!);
  for (let i = 0; i + term.words.length <= words.length; i++) {
    if (term.words.every((w, j) => words[i + j] === w)) return true;
  }
  return false;
}

const corpusWords = CORPUS.map(searchWords);

function oracle(q: string): Oracle {
  if ([...q].length > 256 || q.length === 0) return { status: 400, indexes: [] };
  let query;
  try {
    query = parseSearchQuery(q);
  } catch (err) {
    if (err instanceof AppError && err.code === 'VALIDATION_ERROR') return { status: 400, indexes: [] };
    throw err;
  }
  const indexes = corpusWords
    .map((words, i) => ({ words, i }))
    .filter(({ words }) => query.include.every((t) => termMatches(words, t)) && !query.exclude.some((t) => termMatches(words, t)))
    .map(({ i }) => i)
    .reverse();
  return { status: 200, indexes };
}

interface Engine {
  dialect: string;
  server: TestServer;
  api: Api;
  reader: TestAgent;
  /** Message id -> corpus index. */
  indexOf: Map<string, number>;
}

describe('search parity: SQLite FTS5, PostgreSQL and the reference', () => {
  const engines: Engine[] = [];

  beforeAll(async () => {
    for (const dialect of dialects) {
      const server = await startTestServer({ db: await createTestDatabase(dialect) });
      const api = new Api(server.url);
      const admin = await newAdmin(api);
      const reader = await newAgent(api);
      const room = await newRoom(api, admin, [reader]);
      const indexOf = new Map<string, number>();
      // One at a time: ids (time-ordered) follow the corpus order.
      for (const [i, body] of CORPUS.entries()) indexOf.set((await sendMessage(api, reader, room.id, body)).id, i);
      engines.push({ dialect, server, api, reader, indexOf });
    }
  });
  afterAll(async () => {
    for (const e of engines) await e.server.close();
  });

  async function run(engine: Engine, q: string): Promise<Oracle> {
    const res = await engine.api.get(`/api/v1/search/messages?limit=100&q=${encodeURIComponent(q)}`, { jwt: engine.reader.jwt });
    if (res.status !== 200) return { status: res.status as 400, indexes: [] };
    return { status: 200, indexes: res.body.results.map((m: { id: string }) => engine.indexOf.get(m.id) ?? -1) };
  }

  async function expectParity(q: string): Promise<void> {
    const expected = oracle(q);
    for (const engine of engines) expect(await run(engine, q), `${engine.dialect}: ${JSON.stringify(q)}`).toEqual(expected);
  }

  it('the reference says what the contract says on a few queries', () => {
    expect(oracle('CAFÉ').indexes).toEqual([1, 0]);
    expect(oracle('deploy').indexes).toEqual([1, 0]);
    expect(oracle('deploy*').indexes).toEqual([1, 0]);
    expect(oracle('example').indexes).toEqual([2]);
    expect(oracle('v2').indexes).toEqual([3]);
    expect(oracle('"release notes"').indexes).toEqual([22, 21]);
    expect(oracle('release -"release notes"').indexes).toEqual([3]);
    expect(oracle('NOT').indexes).toEqual([16, 3]);
    expect(oracle('naive').indexes).toEqual([4]);
    expect(oracle('-deploy').status).toBe(400);
    expect(oracle('*').status).toBe(400);
  });

  it('gives the same results on both engines for a list of queries', async () => {
    expect(engines.map((e) => e.dialect)).toEqual([...dialects]);
    for (const q of FIXED_QUERIES) await expectParity(q);
  });

  it('gives the same results on both engines for generated queries', async () => {
    const vocabulary = [...new Set(corpusWords.flat())];
    const word = fc.oneof(
      fc.constantFrom(...vocabulary),
      fc.constantFrom(...vocabulary).map((w) => w.toUpperCase()),
      fc.constantFrom(...vocabulary).chain((w) => fc.integer({ min: 1, max: Math.max(1, [...w].length) }).map((n) => [...w].slice(0, n).join(''))),
      fc.constantFrom('AND', 'OR', 'NOT', 'NEAR', 'café', 'CAFE', 'Straße', 'İ', 'missing'),
    );
    const piece = fc.oneof(
      { weight: 5, arbitrary: word },
      { weight: 1, arbitrary: word.map((w) => `${w}*`) },
      { weight: 1, arbitrary: word.map((w) => `-${w}`) },
      { weight: 1, arbitrary: fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => `"${ws.join(' ')}"`) },
      { weight: 1, arbitrary: fc.array(word, { minLength: 1, maxLength: 3 }).map((ws) => `-"${ws.join(' ')}"`) },
      { weight: 1, arbitrary: fc.constantFrom('"', '*', '-', '(', ')', ':', '^', '.', '@', "'", '--', 'NEAR(', '+') },
    );
    const separator = fc.constantFrom(' ', ' ', ' ', '  ', '.', '@', ',', '\u00a0');
    const query = fc.array(fc.tuple(piece, separator), { minLength: 1, maxLength: 5 }).map((parts) => parts.map(([p, s]) => p + s).join('').trim());
    await fc.assert(fc.asyncProperty(query, async (q) => expectParity(q)), { numRuns: RUNS });
  });
});
