import { Text, Type } from '../validation.js';

/** Longest query, in code points. */
export const SEARCH_QUERY_MAX = 256;

/** `q` of `GET /api/v1/search/messages` (the paging parameters are parsed as history's are). */
export const SearchQueryInput = Type.Object(
  { q: Text({ minLength: 1, maxLength: SEARCH_QUERY_MAX }) },
  { additionalProperties: true },
);
