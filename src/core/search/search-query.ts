import { validationError } from '../../errors.js';
import { boundWord, foldText, wordsOfFolded } from '../search-text.js';

/**
 * The query language of message search, parsed once into terms; the store writes them for each
 * engine (store/dialect.ts: an FTS5 MATCH expression, a PostgreSQL tsquery plus phrase patterns).
 * User text never reaches either engine's syntax: every term is made of folded words (letters and
 * digits only), quoted there.
 *
 * - words: every one must match a whole word of the message (in any order);
 * - `word*`: a word starting with `word`;
 * - `"two words"`: the words next to each other, in that order (inside quotes `*` and `-` are
 *   separators like any other punctuation); a quote left open runs to the end of the query;
 * - `-word`, `-word*`, `-"two words"`: messages containing it are left out. The `-` counts at the
 *   start of the query or after a space; elsewhere (`v2.0-beta`) it separates words.
 * Nothing else is an operator: AND, OR, NOT, NEAR are words; other punctuation separates words.
 * The query is folded like the index (../search-text.ts) before it is cut, so `Café` finds `cafe`.
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
