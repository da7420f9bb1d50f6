import { describe, expect, it } from 'vitest';
import { parseSearchQuery } from '../../src/core/search/search-query.js';
import { toFts5Match, toPostgresSearch } from '../../src/store/dialect.js';
import { MAX_WORD_LENGTH, searchText, searchWords } from '../../src/core/search-text.js';
import { AppError } from '../../src/errors.js';

describe('search text folding', () => {
  it('cuts words at everything but letters and digits', () => {
    expect(searchWords('user@example.com')).toEqual(['user', 'example', 'com']);
    expect(searchWords('v2.0')).toEqual(['v2', '0']);
    expect(searchWords('snake_case kebab-case')).toEqual(['snake', 'case', 'kebab', 'case']);
    expect(searchWords('🚀 launch!!! 日本語 東京')).toEqual(['launch', '日本語', '東京']);
    expect(searchText('  !!!  ')).toBe('');
  });

  it('ignores case and diacritics; a mark stays inside its word', () => {
    expect(searchText('Café CAFÉ cafe\u0301 Naïve')).toBe('cafe cafe cafe naive');
    expect(searchText('İstanbul')).toBe('istanbul');
    expect(searchText('ＦＵＬＬ ﬁnance x²')).toBe('full finance x2');
    expect(searchText('Ёлка')).toBe('елка');
  });

  it('cuts over-long words so both engines can index them', () => {
    const [word] = searchWords('a'.repeat(MAX_WORD_LENGTH + 50));
    expect([...word!]).toHaveLength(MAX_WORD_LENGTH);
    const [astral] = searchWords('𝐀'.repeat(MAX_WORD_LENGTH + 1)); // letters outside the BMP count once
    expect([...astral!]).toHaveLength(MAX_WORD_LENGTH);
  });

  it('indexes an ASCII text (its own quicker path) exactly as the Unicode folding does', () => {
    // Every ASCII character, control ones included, in random texts with long runs of letters.
    let seed = 7;
    const random = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const pieces = ['Hello', 'WORLD', 'x'.repeat(MAX_WORD_LENGTH + 3), ' ', '_', '-', '\n', '\t', '\u0000', '\u007f', '42', 'v2.0'];
    for (let t = 0; t < 2000; t++) {
      let text = '';
      for (let i = random(12); i > 0; i--) text += random(2) === 0 ? String.fromCharCode(random(128)) : pieces[random(pieces.length)];
      expect(searchText(text), JSON.stringify(text)).toBe(searchWords(text).join(' '));
    }
    expect(searchText('Send 2 MESSAGES: user@example.com, v2.0!')).toBe('send 2 messages user example com v2 0');
    expect(searchText('a'.repeat(MAX_WORD_LENGTH + 1))).toBe('a'.repeat(MAX_WORD_LENGTH));
  });
});

describe('search query language', () => {
  const parse = (q: string) => parseSearchQuery(q);
  const qError = (q: string): string | undefined => {
    try {
      parse(q);
      return undefined;
    } catch (err) {
      if (err instanceof AppError) return err.details?.q;
      throw err;
    }
  };

  it('parses words, prefixes, phrases and exclusions', () => {
    expect(parse('Deploy café*')).toEqual({ include: [{ words: ['deploy'], prefix: false }, { words: ['cafe'], prefix: true }], exclude: [] });
    expect(parse('"Release  notes" -draft -"old build" -v1*')).toEqual({
      include: [{ words: ['release', 'notes'], prefix: false }],
      exclude: [{ words: ['draft'], prefix: false }, { words: ['old', 'build'], prefix: false }, { words: ['v1'], prefix: true }],
    });
    // `-` excludes only at the start of a chunk; elsewhere it separates words.
    expect(parse('v2.0-beta').include.map((t) => t.words[0])).toEqual(['v2', '0', 'beta']);
    // Inside quotes `*` and `-` are plain separators; a quote left open runs to the end.
    expect(parse('"two wor* -x').include).toEqual([{ words: ['two', 'wor', 'x'], prefix: false }]);
    // Repeats count once, however many words a few characters fold into.
    expect(parse('\ufdfa '.repeat(128)).include).toHaveLength(4);
    expect(parse('a a* a "a" -b -b').include).toHaveLength(2);
    // Operator words of either engine are words.
    expect(parse('AND OR NOT NEAR').include.map((t) => t.words[0])).toEqual(['and', 'or', 'not', 'near']);
  });

  it('refuses a query without a word to find, naming q', () => {
    for (const q of ['*', '"', '""', '-', '!!!', '( ) : ^']) expect(qError(q), q).toBe('must contain a word (a run of letters or digits)');
    for (const q of ['-deploy', '-"two words"', '-a* -b']) expect(qError(q), q).toBe('must contain a word to find, not only words to exclude');
  });

  it('writes FTS5 expressions from quoted words only', () => {
    expect(toFts5Match(parse('a b* "c d" -e -"f g" -h*'))).toBe('(((("a" AND "b"* AND "c d") NOT "e") NOT "f g") NOT "h"*)');
    expect(toFts5Match(parse('NEAR(x y) OR z:*'))).toBe('("near" AND "x" AND "y" AND "or" AND "z")');
  });

  it('writes PostgreSQL tsquery text with quoted lexemes, phrases as patterns', () => {
    expect(toPostgresSearch(parse('a b* "c d" -e -"f g" -h*'))).toEqual({
      tsquery: "'a' & 'b':* & 'c' & 'd' & !'e' & !'h':*",
      phrases: ['% c d %'],
      excludedPhrases: ['% f g %'],
    });
  });
});
