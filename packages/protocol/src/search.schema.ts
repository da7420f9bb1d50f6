import { IdString } from './common.schema.js';
import { HistoryLimit, MessageSchema } from './messages.schema.js';
import { Text, Type, Uuid } from './text.js';

/** Longest query, in code points. */
export const SEARCH_QUERY_MAX = 256;

/** `q` of `GET /api/v1/search/messages` (the paging parameters are parsed as history's are). */
export const SearchQueryInput = Type.Object(
  { q: Text({ minLength: 1, maxLength: SEARCH_QUERY_MAX }) },
  { additionalProperties: true },
);

export const SearchQuerySchema = Type.Object({
  q: Type.String({ minLength: 1, maxLength: SEARCH_QUERY_MAX, description: 'Words (all must match), word* (prefix), "a phrase", -excluded; case and accents ignored' }),
  roomId: Type.Optional(Uuid({ description: 'Only this room' })),
  before: Type.Optional(Uuid({ description: 'A message id: older results (exclusive)' })),
  limit: Type.Optional(HistoryLimit),
});

export const SearchPageSchema = Type.Object(
  {
    results: Type.Array(MessageSchema, { description: 'Newest first' }),
    nextCursor: Type.Union([IdString(), Type.Null()], { description: 'Id of the last result; null when the page is empty' }),
    hasMore: Type.Boolean(),
  },
  { title: 'SearchPage' },
);
