/**
 * The one text normalisation of search, applied alike to message bodies (at indexing) and to
 * queries, in JavaScript, so that SQLite FTS5 and PostgreSQL see identical tokens and give the
 * same results: neither engine's own tokenizer, stemmer or locale takes part.
 *
 * A word is a maximal run of Unicode letters and digits (\p{L}\p{N}); every other character
 * separates words. Before words are cut, the text is decomposed (NFKD: compatibility forms such as
 * `ﬁ`, `²`, fullwidth letters become their plain letters), lowercased and stripped of combining
 * marks (\p{M}), so matching ignores case and diacritics: `Café` and `CAFE` are both `cafe`.
 * A mark is removed, not treated as a separator: a letter and its accent stay one word.
 */

/**
 * Longest word kept, in code points; longer ones are cut to it. PostgreSQL refuses lexemes over
 * 2046 bytes, so without a bound one long word would index differently on the two engines.
 */
export const MAX_WORD_LENGTH = 200;

const MARKS = /\p{M}+/gu;
const WORD = /[\p{L}\p{N}]+/gu;

/** NFKD, lowercase, NFKD again (lowercasing can produce decomposable letters, e.g. `İ`), no marks. */
export function foldText(text: string): string {
  return text.normalize('NFKD').toLowerCase().normalize('NFKD').replace(MARKS, '');
}

/** Cuts a word to MAX_WORD_LENGTH code points (words are checked in UTF-16 units first: cheap). */
export function boundWord(word: string): string {
  if (word.length <= MAX_WORD_LENGTH) return word;
  return Array.from(word).slice(0, MAX_WORD_LENGTH).join('');
}

/** The words of an already folded text, in order. */
export function wordsOfFolded(folded: string): string[] {
  return Array.from(folded.matchAll(WORD), (m) => boundWord(m[0]));
}

/** The words of a text, folded, in order. */
export function searchWords(text: string): string[] {
  return wordsOfFolded(foldText(text));
}

/**
 * What the index stores for a message: its words joined by single spaces ('' when it has none).
 * Both engines split it on spaces only (FTS5's `ascii` tokenizer treats every non-ASCII character
 * as part of a token; PostgreSQL builds its tsvector with string_to_array).
 */
export function searchText(body: string): string {
  if (!NON_ASCII.test(body)) return asciiWords(body);
  return searchWords(body).join(' ');
}

const NON_ASCII = /[\u0080-\uffff]/;
const ASCII_WORD = /[a-z0-9]+/g;

/**
 * searchText of an ASCII text, the common case, without Unicode normalisation (ASCII is its own
 * NFKD and has no marks) or property classes: its letters and digits are [a-z0-9] once lowercased.
 * The same result (test/unit/search-query.test.ts), at a fraction of the cost (it runs for every message).
 */
function asciiWords(body: string): string {
  const words = body.toLowerCase().match(ASCII_WORD);
  if (words === null) return '';
  for (let i = 0; i < words.length; i++) if (words[i]!.length > MAX_WORD_LENGTH) words[i] = words[i]!.slice(0, MAX_WORD_LENGTH);
  return words.join(' ');
}
