/**
 * Migration 005's text folding, frozen as it was when the migration was written: a migration
 * computes what it backfills with its own code, never today's (core/search/search-text.ts may
 * change; a change to the folding is a new migration that rebuilds the index).
 */

const MAX_WORD_LENGTH = 200;
const MARKS = /\p{M}+/gu;
const WORD = /[\p{L}\p{N}]+/gu;
const NON_ASCII = /[\u0080-\uffff]/;
const ASCII_WORD = /[a-z0-9]+/g;

const bound = (word: string): string => (word.length <= MAX_WORD_LENGTH ? word : Array.from(word).slice(0, MAX_WORD_LENGTH).join(''));

/** A message body as the index stores it: its folded words joined by single spaces. */
export function searchText005(body: string): string {
  if (!NON_ASCII.test(body)) return (body.toLowerCase().match(ASCII_WORD) ?? []).map((w) => w.slice(0, MAX_WORD_LENGTH)).join(' ');
  const folded = body.normalize('NFKD').toLowerCase().normalize('NFKD').replace(MARKS, '');
  return Array.from(folded.matchAll(WORD), (m) => bound(m[0])).join(' ');
}
