import type { Kysely } from 'kysely';
import { unauthenticated, validationError } from '../../errors.js';
import type { DB } from '../../store/schema.js';
import { recordAudit } from '../audit/audit.store.js';
import type { Principal } from '../principal.js';
import { generateApiToken, looksLikeApiToken, parseApiToken } from './api-token.js';
import type { JwtCodec } from './jwt.js';
import { hashSecret, verifySecret } from './secret-hash.js';
import { findTokenByPrefix } from './tokens.store.js';

export interface SessionRequest {
  /** The Authorization header's bearer value, if any. */
  bearer: string | undefined;
  /** The parsed JSON body, if any. */
  body: unknown;
}

export interface Session {
  token: string;
  expiresAt: string;
}

export interface SessionsService {
  exchange(request: SessionRequest): Promise<Session>;
  /** Verifies a session JWT (REST and WebSocket handshake). */
  authenticate(jwt: string): Principal & { exp: number };
}

const INVALID = 'Invalid or expired API token';

/** Picks the API token from the header and/or body per DESIGN.md section 3. */
function pickApiToken({ bearer, body }: SessionRequest): string {
  let fromBody: string | undefined;
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && 'apiToken' in body) {
    const value = (body as { apiToken: unknown }).apiToken;
    if (typeof value !== 'string') throw validationError({ apiToken: 'must be a string' });
    fromBody = value;
  }
  const fromHeader = bearer !== undefined && looksLikeApiToken(bearer) ? bearer : undefined;
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw validationError({ apiToken: 'differs from the API token in the Authorization header' }, 'Two different API tokens were sent');
  }
  const token = fromBody ?? fromHeader;
  if (token === undefined) throw unauthenticated('An API token is required (Authorization: Bearer agt_... or {"apiToken"})');
  return token;
}

export function createSessionsService(deps: { db: Kysely<DB>; jwt: JwtCodec }): SessionsService {
  const { db, jwt } = deps;
  // Unknown prefixes are verified against this hash too, so they cost the same time as a wrong secret.
  let decoyHash: Promise<string> | undefined;
  const decoy = (): Promise<string> => (decoyHash ??= hashSecret(generateApiToken().secret));

  return {
    async exchange(request) {
      const apiToken = pickApiToken(request);
      const parts = parseApiToken(apiToken);
      const stored = parts ? await findTokenByPrefix(db, parts.prefix) : null;
      const ok = await verifySecret(stored?.secretHash ?? (await decoy()), parts?.secret ?? apiToken);
      const now = new Date();
      if (!stored || !ok || stored.revokedAt !== null || (stored.expiresAt !== null && new Date(stored.expiresAt) <= now)) {
        throw unauthenticated(INVALID);
      }
      const { token, claims } = jwt.sign({ agentId: stored.agentId, role: stored.role, tokenId: stored.id });
      await recordAudit(db, { event: 'jwt-issued', actorId: stored.agentId, subjectId: stored.agentId, detail: { tokenId: stored.id, exp: claims.exp } });
      return { token, expiresAt: new Date(claims.exp * 1000).toISOString() };
    },

    authenticate(token) {
      if (looksLikeApiToken(token)) throw unauthenticated('An API token cannot be used here; exchange it at POST /api/v1/sessions');
      return jwt.verify(token);
    },
  };
}

