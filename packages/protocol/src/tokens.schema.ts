import { IdString, Nullable, Timestamp } from './common.schema.js';
import { SCOPE_ACTIONS } from './roles.js';
import { Type, Uuid } from './text.js';

/**
 * Token issuance and session exchange. Their input is checked by tokens.service.ts and
 * sessions.service.ts (scopes nesting and size, timestamps on the calendar, the two places an API
 * token may come from), which no JSON Schema can express whole; these schemas describe the same
 * rules for the documents.
 */

/** docs/scopes.md: `actions` and `rooms` limit the token; other keys are stored and ignored. */
export const TokenScopes = Type.Object(
  {
    actions: Type.Optional(Type.Array(Type.Union(SCOPE_ACTIONS.map((action) => Type.Literal(action))), {
      description: 'What the token may do (docs/scopes.md); absent: every right of the agent\'s role; []: none of them. An unknown action is 400 (details["scopes.actions"])',
    })),
    rooms: Type.Optional(Type.Array(Uuid(), {
      description: 'The only rooms the token reaches (others are refused as to a non-member and left out of every listing); absent: every room',
    })),
  },
  {
    additionalProperties: true,
    description: 'Stored and returned as given (at most 4096 bytes of JSON, nested at most 16 levels); defaults to {}. A session exchanged for the token carries `actions` and `rooms` in its JWT claim `scp`',
  },
);

export const IssueTokenInput = Type.Object(
  {
    scopes: Type.Optional(TokenScopes),
    expiresAt: Type.Optional(Nullable(Type.String({ format: 'date-time', description: 'When the token stops working; absent or null: never' }))),
  },
  { additionalProperties: true },
);

export const IssuedTokenSchema = Type.Object(
  {
    id: IdString(),
    token: Type.String({ pattern: '^agt_[0-9a-f]{12}_[0-9a-f]{64}$', description: 'agt_<prefix>_<secret>: shown here once, never again' }),
    prefix: Type.String({ pattern: '^agt_[0-9a-f]{12}$', description: 'agt_<prefix>: names the token to revoke it' }),
    scopes: Type.Record(Type.String(), Type.Unknown(), { description: 'As issued (`actions` and `rooms`: see IssueTokenInput)' }),
    expiresAt: Nullable(Timestamp()),
    createdAt: Timestamp(),
  },
  { title: 'IssuedToken' },
);

export const TokenSummarySchema = Type.Object(
  {
    id: IdString('Names the token (or grant) to revoke it at DELETE /api/v1/agents/:id/tokens/:tokenId'),
    kind: Type.Optional(Type.Union([Type.Literal('api'), Type.Literal('oauth')], {
      description: '`api`: an API token; `oauth`: a grant to an OAuth client (docs/oauth.md), whose access and refresh tokens it covers',
    })),
    prefix: Type.Optional(Type.String({ pattern: '^agt_[0-9a-f]{12}$', description: 'agt_<prefix>: names the token to revoke it (API tokens only)' })),
    clientName: Type.Optional(Type.String({ description: 'The OAuth client\'s name (grants only)' })),
    clientId: Type.Optional(Type.String({ description: 'The OAuth client\'s id: a registered client\'s, or its metadata document\'s URL (grants only)' })),
    scopes: Type.Record(Type.String(), Type.Unknown(), { description: 'As issued (`actions` and `rooms`: see IssueTokenInput); a grant\'s: `{actions}` granted' }),
    expiresAt: Nullable(Timestamp()),
    createdAt: Timestamp(),
    revokedAt: Nullable(Timestamp('When it was revoked; null while it is not')),
    lastUsedAt: Nullable(Timestamp('The last session exchange (a grant: the last use of its access token at /mcp), to the minute; null: never used')),
  },
  { title: 'TokenSummary', description: 'An API token without its secret (which is never stored) or the secret\'s hash, or an OAuth grant' },
);

export const TokenList = Type.Object({ tokens: Type.Array(TokenSummarySchema, { description: 'Oldest first, revoked and expired ones included' }) });

export const TokenListQuery = Type.Object({
  kind: Type.Optional(Type.Union([Type.Literal('api'), Type.Literal('oauth')], { description: 'Only API tokens, or only OAuth grants (an agent may list its own grants)' })),
});

export const AgentTokenParams = Type.Object({ id: Uuid({ description: 'Agent id' }), tokenId: Uuid({ description: 'The id of one of its API tokens, or of one of its OAuth grants' }) });

export const TokenPrefixParams = Type.Object({ prefix: Type.String({ description: 'The token prefix, agt_<prefix>' }) });

export const SessionInput = Type.Object(
  { apiToken: Type.Optional(Type.String({ description: 'The API token, when it is not in the Authorization header' })) },
  { additionalProperties: true },
);

export const SessionSchema = Type.Object(
  {
    token: Type.String({ description: 'The session JWT (HS256)' }),
    expiresAt: Timestamp('The JWT `exp`'),
  },
  { title: 'Session' },
);

export const AgentIdParams = Type.Object({ id: Uuid({ description: 'Agent id' }) });
