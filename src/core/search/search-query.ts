import { validationError } from '../../errors.js';
import { boundWord, foldText, wordsOfFolded } from './search-text.js';

/**
 * The query language of message search, parsed once into terms, then written for each engine
 * (an FTS5 MATCH expression, a PostgreSQL tsquery plus phrase patterns). User text never reaches
 * either engine's syntax: every term is made of folded words (letters and digits only), quoted.
 *
 * - words: every one must match a whole word of the message (in any order);
 * - `word*`: a word starting with `word`;
 * - `"two words"`: the words next to each other, in that order (inside quotes `*` and `-` are
 *   separators like any other punctuation); a quote left open runs to the end of the query;
 * - `-word`, `-word*`, `-"two words"`: messages containing it are left out. The `-` counts at the
 *   start of the query or after a space; elsewhere (`v2.0-beta`) it separates words.
 * Nothing else is an operator: AND, OR, NOT, NEAR are words; other punctuation separates words.
 * The query is folded like the index (search-text.ts) before it is cut, so `Café` finds `cafe`.
 */

export interface SearchTerm {
  /** One word, or several for a phrase (folded, never empty). */
  words: string[];
  /** A single word matched as a prefix. Never set on a phrase. */
  prefix: boolean;
}

export interface SearchQuery {
  /** Every one must match (never empty). */
  include: SearchTerm[];
  /** None may match. */
  exclude: SearchTerm[];
}

const WORD_AT = /[\p{L}\p{N}]+/uy;
const SPACE = /\s/u;

function wordAt(text: string, index: number): string | null {
  WORD_AT.lastIndex = index;
  const match = WORD_AT.exec(text);
  return match ? match[0] : null;
}

/** Parses `q` (already validated as text); a query without a word to find is a VALIDATION_ERROR on `q`. */
export function parseSearchQuery(q: string): SearchQuery {
  const text = foldText(q);
  const include: SearchTerm[] = [];
  const exclude: SearchTerm[] = [];
  // A repeated term adds nothing; dropping repeats bounds the work of a query whose few
  // characters fold into many words (one `ﷺ`, U+FDFA, is four).
  const seen = new Set<string>();
  const add = (negate: boolean, term: SearchTerm): void => {
    const key = `${negate ? '-' : '+'}${term.prefix ? '*' : ''}${term.words.join(' ')}`;
    if (seen.has(key)) return;
    seen.add(key);
    (negate ? exclude : include).push(term);
  };
  let atChunkStart = true;
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (SPACE.test(ch)) {
      atChunkStart = true;
      i++;
      continue;
    }
    let negate = false;
    if (ch === '-' && atChunkStart && (text[i + 1] === '"' || wordAt(text, i + 1) !== null)) {
      negate = true;
      i++;
    }
    atChunkStart = false;
    if (text[i] === '"') {
      const close = text.indexOf('"', i + 1);
      const end = close < 0 ? text.length : close;
      const words = wordsOfFolded(text.slice(i + 1, end));
      if (words.length > 0) add(negate, { words, prefix: false });
      i = end + 1;
      continue;
    }
    const word = wordAt(text, i);
    if (word === null) {
      i++;
      continue;
    }
    i += word.length;
    const prefix = text[i] === '*';
    if (prefix) i++;
    add(negate, { words: [boundWord(word)], prefix });
  }
  if (include.length === 0) {
    throw validationError({
      q: exclude.length > 0 ? 'must contain a word to find, not only words to exclude' : 'must contain a word (a run of letters or digits)',
    });
  }
  return { include, exclude };
}

// ------------------------------------------------------------------ SQLite FTS5

const ftsString = (words: string[]): string => `"${words.join(' ').replaceAll('"', '""')}"`;
const ftsTerm = (term: SearchTerm): string => ftsString(term.words) + (term.prefix ? '*' : '');

/**
 * The FTS5 MATCH expression: `("a" AND "b"* AND "c d") NOT "e" NOT "f"*`. Every word is a quoted
 * string, so FTS5 keywords and syntax in the user's text are inert.
 */
export function toFts5Match(query: SearchQuery): string {
  let expression = `(${query.include.map(ftsTerm).join(' AND ')})`;
  for (const term of query.exclude) expression = `(${expression} NOT ${ftsTerm(term)})`;
  return expression;
}

// ------------------------------------------------------------------ PostgreSQL

export interface PostgresSearch {
  /** tsquery text (every lexeme quoted) for the GIN index: the words of every included term, exclusions of single words. */
  tsquery: string;
  /** LIKE patterns the padded index text must match (phrases), and must not match (excluded phrases). */
  phrases: string[];
  excludedPhrases: string[];
}

const tsLexeme = (word: string): string => `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
const likeEscape = (text: string): string => text.replace(/[\\%_]/g, '\\$&');
/** Matches ` w1 w2 ` inside the index text padded with a space on each side. */
const phrasePattern = (words: string[]): string => `% ${likeEscape(words.join(' '))} %`;

/**
 * The PostgreSQL form. The index is a tsvector of the message's words without positions (built from
 * the stored text, see migration 005), so phrases are checked on the stored text itself: exact
 * adjacency, as FTS5 does it, with no limit on positions or repeats.
 */
export function toPostgresSearch(query: SearchQuery): PostgresSearch {
  const parts: string[] = [];
  const phrases: string[] = [];
  const excludedPhrases: string[] = [];
  for (const term of query.include) {
    for (const word of term.words) parts.push(tsLexeme(word) + (term.prefix ? ':*' : ''));
    if (term.words.length > 1) phrases.push(phrasePattern(term.words));
  }
  for (const term of query.exclude) {
    if (term.words.length > 1) excludedPhrases.push(phrasePattern(term.words));
    else parts.push(`!${tsLexeme(term.words[0]!)}${term.prefix ? ':*' : ''}`);
  }
  return { tsquery: parts.join(' & '), phrases, excludedPhrases };
}
